//! The request's `chat_template_kwargs` (the HF and vLLM convention: the
//! template's own variables, passed along with the messages), as far as
//! they change what a parser reads.
//!
//! Templates switch thinking with different variables: Qwen3 reads
//! `enable_thinking`, DeepSeek V3.1 `thinking`. The generator finds them by
//! rendering and lists them in each module's `THINKING_SWITCHES`; a parser
//! built with [`Options::chat_template_kwargs`] takes thinking from them.
//!
//! # Example
//! ```
//! use chat_parser_runtime::kwargs::{Kwarg, SwitchValue, ThinkingSwitch};
//! use chat_parser_runtime::Options;
//! // DeepSeek V3.1: `thinking: false` writes the no-thinking prompt.
//! const SWITCHES: &[ThinkingSwitch] = &[
//!     ThinkingSwitch { variable: "thinking", value: SwitchValue::Bool(true), thinking: true },
//!     ThinkingSwitch { variable: "thinking", value: SwitchValue::Bool(false), thinking: false },
//! ];
//! let kwargs = [("thinking", Kwarg::Bool(false))];
//! let options = Options { chat_template_kwargs: &kwargs, ..Options::default() };
//! assert!(!options.thinking(SWITCHES));
//! assert!(Options::default().thinking(SWITCHES));
//!
//! // GigaChat 3.5 ignores `enable_thinking`: its `reasoning` is off unless set.
//! const OWN: &[ThinkingSwitch] = &[
//!     ThinkingSwitch { variable: "", value: SwitchValue::Bool(true), thinking: false },
//!     ThinkingSwitch { variable: "reasoning", value: SwitchValue::Bool(true), thinking: true },
//!     ThinkingSwitch { variable: "reasoning", value: SwitchValue::Bool(false), thinking: false },
//! ];
//! assert!(!Options::default().thinking(OWN));
//! let kwargs = [("reasoning", Kwarg::Bool(true))];
//! assert!(Options { chat_template_kwargs: &kwargs, enable_thinking: false, ..Options::default() }.thinking(OWN));
//! ```

use crate::Options;

/// One value of `chat_template_kwargs` (JSON numbers as integers; other
/// JSON values a switch never compares equal to are `Null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kwarg<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'a str),
}

impl Kwarg<'_> {
    /// Jinja's truthiness of the value.
    pub fn truthy(self) -> bool {
        match self {
            Kwarg::Null => false,
            Kwarg::Bool(b) => b,
            Kwarg::Int(i) => i != 0,
            Kwarg::Str(s) => !s.is_empty(),
        }
    }
}

/// A value of a switch variable, as the generator probed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchValue {
    /// Compared by truthiness (`"thinking": 1` is `true`).
    Bool(bool),
    /// Compared by value (Seed-OSS's `thinking_budget: 0`).
    Int(i64),
}

/// With `variable` set to `value`, the template writes the thinking
/// (`thinking: true`) or the no-thinking generation prompt.
///
/// An entry whose `variable` is empty (first in a module's list) is the
/// template's default for a template that ignores `enable_thinking` and
/// switches thinking with a variable of its own (Cohere2 MoE's
/// `reasoning`, on by default; GigaChat 3.5's, off): thinking is `thinking`
/// unless that variable says otherwise, whatever `enable_thinking` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkingSwitch {
    pub variable: &'static str,
    pub value: SwitchValue,
    pub thinking: bool,
}

impl ThinkingSwitch {
    fn matches(&self, v: Kwarg<'_>) -> bool {
        match self.value {
            SwitchValue::Bool(b) => v.truthy() == b,
            SwitchValue::Int(i) => v == Kwarg::Int(i),
        }
    }
}

impl Options<'_> {
    /// Whether the generation prompt left thinking on: `enable_thinking`
    /// (or the template's default, where it ignores `enable_thinking`: an
    /// entry without a variable), unless a `chat_template_kwargs` variable
    /// among `switches` says otherwise (a later switch wins over an
    /// earlier one).
    pub fn thinking(&self, switches: &[ThinkingSwitch]) -> bool {
        let mut on = self.enable_thinking;
        for s in switches {
            if s.variable.is_empty() {
                on = s.thinking;
                continue;
            }
            if let Some((_, v)) = self.chat_template_kwargs.iter().find(|(k, _)| *k == s.variable) {
                if s.matches(*v) {
                    on = s.thinking;
                }
            }
        }
        on
    }

    /// Which of a generated parser's 16 grammar variants a request takes:
    /// thinking off (8), reasoning not extracted (4), and the reply's kind
    /// (0 no tools, 1 one call, 2 parallel calls, 3 structured output).
    /// The module maps it to its entry state (its table's `entries`).
    pub fn variant(&self, switches: &[ThinkingSwitch]) -> usize {
        let reply = if self.structured_output {
            3
        } else if self.tools.is_empty() {
            0
        } else if self.parallel_tool_calls {
            2
        } else {
            1
        };
        usize::from(!self.thinking(switches)) * 8 + usize::from(self.reasoning_format == crate::ReasoningFormat::None) * 4 + reply
    }
}
