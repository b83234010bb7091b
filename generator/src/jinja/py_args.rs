//! Python-style binding of filter arguments given positionally or by keyword.
//!
//! `tojson`, `indent` and `join` take optional parameters that templates pass either way
//! (`tojson(indent=4)`, `indent(4, first=true)`); minijinja's typed signatures cannot
//! express "this position or this keyword", so these filters take the raw arguments and
//! bind them here, in declaration order, as Python does.

use std::vec::IntoIter;

use minijinja::value::{Kwargs, Rest, Value, ValueOrKwargs};
use minijinja::{Error, ErrorKind};

pub(crate) struct PyArgs {
    function: &'static str,
    positional: IntoIter<Value>,
    kwargs: Option<Kwargs>,
}

impl PyArgs {
    /// Splits the arguments of `function`, which declares `max_positional` parameters.
    pub(crate) fn new(
        function: &'static str,
        args: Rest<ValueOrKwargs>,
        max_positional: usize,
    ) -> Result<PyArgs, Error> {
        let mut positional = args.into_values();
        let kwargs = match positional.last() {
            Some(last) if last.is_kwargs() => {
                Some(Kwargs::try_from(positional.pop().unwrap_or_default())?)
            }
            _ => None,
        };
        if positional.len() > max_positional {
            return Err(Error::new(
                ErrorKind::TooManyArguments,
                format!("{function}() takes at most {max_positional} arguments"),
            ));
        }
        Ok(PyArgs {
            function,
            positional: positional.into_iter(),
            kwargs,
        })
    }

    /// The next declared parameter, `name`: the next positional argument or the keyword
    /// argument of that name (both at once is an error, as in Python).
    pub(crate) fn next(&mut self, name: &str) -> Result<Option<Value>, Error> {
        let positional = self.positional.next();
        let keyword = match &self.kwargs {
            Some(kwargs) => kwargs.get::<Option<Value>>(name)?,
            None => None,
        };
        match (positional, keyword) {
            (Some(_), Some(_)) => Err(Error::new(
                ErrorKind::TooManyArguments,
                format!(
                    "{}() got multiple values for argument '{name}'",
                    self.function
                ),
            )),
            (positional, keyword) => Ok(positional.or(keyword)),
        }
    }

    /// Fails on keyword arguments that name no parameter.
    pub(crate) fn finish(self) -> Result<(), Error> {
        match &self.kwargs {
            Some(kwargs) => kwargs.assert_all_used(),
            None => Ok(()),
        }
    }
}
