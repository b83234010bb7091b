//! Lists that templates can mutate in place, and the `namespace()` that hands them out.
//!
//! minijinja values are immutable, but chat templates accumulate state in lists held by
//! a namespace: Kimi-K2 queues tool-call ids with `{% set _ = q.ids.append(id) %}` and
//! takes them back with `q.ids.pop(0)`, DeepSeek-V3.2 collects tools with
//! `tools.value.append(...)`. [`namespace`] therefore turns every list it is given into a
//! [`MutableList`], a shared `Mutex<Vec<Value>>` that supports Python's list methods.
//!
//! Limits, compared with Python:
//! * Only lists passed to `namespace(...)` (and `list.copy()` results) are mutable. A list
//!   literal elsewhere (`{% set x = [] %}`) or a list assigned later with
//!   `{% set ns.items = ns.items + [x] %}` is an ordinary immutable list, and `append`
//!   on it is an error that says so. minijinja offers no hook into `{% set %}` or list
//!   literals; none of the corpus templates needs more.
//! * `ns.items + [x]` is evaluated lazily by minijinja, so mutating `ns.items` afterwards
//!   also changes what the sum yields.
//! * A list cannot be made to contain itself (Python allows it); that is reported as an
//!   error instead of building a value that would recurse forever when printed.
//!
//! Note that HF transformers renders templates in jinja2's `ImmutableSandboxedEnvironment`,
//! where `list.append` raises `SecurityError`; llama.cpp's template engine allows it and
//! the template authors evidently expect it to work, so it works here.

use std::sync::{Arc, Mutex, MutexGuard};

use minijinja::value::{
    from_args, Enumerator, Object, ObjectRepr, Rest, Value, ValueKind, ValueOrKwargs,
};
use minijinja::{Error, ErrorKind, State};

/// How deep [`MutableList::contains_list`] looks for a cycle before giving up.
const MAX_NESTING: usize = 64;

/// A Python list: shared, growable, mutated through its methods.
#[derive(Debug, Default)]
pub(crate) struct MutableList {
    items: Mutex<Vec<Value>>,
}

impl MutableList {
    /// Wraps `items` in a new mutable list value.
    pub(crate) fn new_value(items: Vec<Value>) -> Value {
        Value::from_object(MutableList {
            items: Mutex::new(items),
        })
    }

    /// The items; a panic while the lock was held cannot leave the `Vec` itself broken,
    /// so a poisoned lock is simply taken over.
    fn lock(&self) -> MutexGuard<'_, Vec<Value>> {
        self.items
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn snapshot(&self) -> Vec<Value> {
        self.lock().clone()
    }

    /// Refuses to store `value` in this list if that would make the list contain itself.
    fn check_insertable(self: &Arc<Self>, value: &Value) -> Result<(), Error> {
        if self.contains_list(value, 0) {
            Err(Error::new(
                ErrorKind::InvalidOperation,
                "a list cannot contain itself (or nesting is too deep)",
            ))
        } else {
            Ok(())
        }
    }

    /// Whether `value` is or (transitively) contains this very list.
    fn contains_list(self: &Arc<Self>, value: &Value, depth: usize) -> bool {
        if depth > MAX_NESTING {
            return true;
        }
        if let Some(other) = value.downcast_object::<MutableList>() {
            if Arc::ptr_eq(self, &other) {
                return true;
            }
            return other
                .snapshot()
                .iter()
                .any(|item| self.contains_list(item, depth + 1));
        }
        match value.kind() {
            ValueKind::Seq => value
                .try_iter()
                .map(|mut items| items.any(|item| self.contains_list(&item, depth + 1)))
                .unwrap_or(false),
            ValueKind::Map => value
                .as_object()
                .and_then(|obj| obj.try_iter_pairs())
                .is_some_and(|mut pairs| {
                    pairs.any(|(_, item)| self.contains_list(&item, depth + 1))
                }),
            _ => false,
        }
    }
}

impl Object for MutableList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    /// Indexing; minijinja has already turned negative indices into positive ones.
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let idx = key.as_usize()?;
        self.lock().get(idx).cloned()
    }

    /// Iteration sees the items as they were when the loop started.
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.snapshot())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.lock().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "append" => {
                let (item,): (Value,) = from_args(args)?;
                self.check_insertable(&item)?;
                self.lock().push(item);
                Ok(Value::from(()))
            }
            "extend" => {
                let (iterable,): (Value,) = from_args(args)?;
                // Collected before locking: `items.extend(items)` iterates this list.
                let new_items: Vec<Value> = iterable.try_iter()?.collect();
                for item in &new_items {
                    self.check_insertable(item)?;
                }
                self.lock().extend(new_items);
                Ok(Value::from(()))
            }
            "insert" => {
                let (index, item): (i64, Value) = from_args(args)?;
                self.check_insertable(&item)?;
                let mut items = self.lock();
                let at = clamp_index(index, items.len());
                items.insert(at, item);
                Ok(Value::from(()))
            }
            "pop" => {
                let (index,): (Option<i64>,) = from_args(args)?;
                let mut items = self.lock();
                if items.is_empty() {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "pop from empty list",
                    ));
                }
                let index = index.unwrap_or(-1);
                match resolve_index(index, items.len()) {
                    Some(at) => Ok(items.remove(at)),
                    None => Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "pop index out of range",
                    )),
                }
            }
            "remove" => {
                let (item,): (Value,) = from_args(args)?;
                let mut items = self.lock();
                match items.iter().position(|x| *x == item) {
                    Some(at) => {
                        items.remove(at);
                        Ok(Value::from(()))
                    }
                    None => Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "list.remove(x): x not in list",
                    )),
                }
            }
            "clear" => {
                let () = from_args(args)?;
                self.lock().clear();
                Ok(Value::from(()))
            }
            "reverse" => {
                let () = from_args(args)?;
                self.lock().reverse();
                Ok(Value::from(()))
            }
            "copy" => {
                let () = from_args(args)?;
                Ok(MutableList::new_value(self.snapshot()))
            }
            // `index`, `count` and friends are shared with immutable lists and handled by
            // the module's unknown-method callback.
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// Python's index for `insert`: negative counts from the end, out-of-range clamps.
fn clamp_index(index: i64, len: usize) -> usize {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let at = if index < 0 {
        (len_i + index).max(0)
    } else {
        index.min(len_i)
    };
    usize::try_from(at).unwrap_or(len)
}

/// Python's index for `pop`: negative counts from the end, out of range is `None`.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len_i = i64::try_from(len).ok()?;
    let at = if index < 0 { len_i + index } else { index };
    if (0..len_i).contains(&at) {
        usize::try_from(at).ok()
    } else {
        None
    }
}

/// Converts a list value to a mutable list; other values are returned unchanged.
/// Tuples stay immutable, as in Python.
fn make_mutable(value: Value) -> Value {
    if value.kind() == ValueKind::Seq
        && !value.is_tuple()
        && value.downcast_object_ref::<MutableList>().is_none()
    {
        match value.try_iter() {
            Ok(items) => MutableList::new_value(items.collect()),
            Err(_) => value,
        }
    } else {
        value
    }
}

/// `namespace(mapping?, **attrs)`: minijinja's namespace, with every list attribute made
/// a [`MutableList`] so that `ns.items.append(x)` works.
pub(crate) fn namespace(args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let mut attrs: Vec<(Value, Value)> = Vec::new();
    for arg in args.into_values() {
        let pairs = arg
            .as_object()
            .filter(|obj| obj.repr() == ObjectRepr::Map)
            .and_then(|obj| obj.try_iter_pairs())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "namespace() expects a mapping or keyword arguments, got {}",
                        arg.kind()
                    ),
                )
            })?;
        // A later duplicate key overrides an earlier one when the map is built.
        attrs.extend(pairs.map(|(key, value)| (key, make_mutable(value))));
    }
    let defaults = if attrs.is_empty() {
        None
    } else {
        Some(ValueOrKwargs::from(Value::from_pairs(attrs)))
    };
    minijinja::functions::namespace(defaults)
}
