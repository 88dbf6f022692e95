//! [`ChatTemplate`]: turning chat messages into a prompt with the model's own Jinja template
//! (`tokenizer.chat_template` of a GGUF file, `chat_template` of `tokenizer_config.json`),
//! rendered by `minijinja` the way `transformers` renders it with Jinja2: blocks trimmed
//! (`trim_blocks`, `lstrip_blocks`), the variables `messages` (each with `role` and
//! `content`), `add_generation_prompt`, `bos_token` and `eos_token`, the functions
//! `raise_exception(message)` (an error naming the message) and `strftime_now(format)` (the
//! current UTC date and time), `break`/`continue`, and Python's string and dict methods
//! (`.strip()`, `.startswith()`, `.split()`, `.items()`, ...) through `minijinja-contrib`'s
//! `pycompat`. A model without a template can use [`ChatTemplate::chatml`], the ChatML format
//! (`<|im_start|>role\ncontent<|im_end|>\n` per message, then `<|im_start|>assistant\n`).

use std::time::{SystemTime, UNIX_EPOCH};

use anygrad_core::{Error, Result};
use minijinja::{Environment, ErrorKind, Value};
use serde::Serialize;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message of `role` with `content`.
    pub fn new(role: &str, content: &str) -> ChatMessage {
        ChatMessage {
            role: role.to_string(),
            content: content.to_string(),
        }
    }
}

/// A model's chat template: its Jinja source and the special tokens it may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The Jinja source, as the model ships it.
    pub source: String,
    /// The text of the beginning-of-sequence token (`bos_token` in the template; empty when
    /// the model has none).
    pub bos_token: String,
    /// The text of the end-of-sequence token (`eos_token` in the template; empty when the
    /// model has none).
    pub eos_token: String,
}

const START: &str = "<|im_start|>";
const END: &str = "<|im_end|>";

/// The ChatML template of [`ChatTemplate::chatml`].
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The context a template is rendered with.
#[derive(Serialize)]
struct TemplateContext<'a> {
    messages: &'a [ChatMessage],
    add_generation_prompt: bool,
    bos_token: &'a str,
    eos_token: &'a str,
}

impl ChatTemplate {
    /// A template of Jinja `source`, without special tokens (see
    /// [`ChatTemplate::with_special_tokens`]).
    pub fn new(source: &str) -> ChatTemplate {
        ChatTemplate {
            source: source.to_string(),
            bos_token: String::new(),
            eos_token: String::new(),
        }
    }

    /// The ChatML template (SmolLM2, Qwen and others), without a default system message: the
    /// fallback for a model that ships no template.
    pub fn chatml() -> ChatTemplate {
        ChatTemplate::new(CHATML)
    }

    /// The template with `bos_token` and `eos_token` set to these texts (empty for `None`).
    pub fn with_special_tokens(mut self, bos: Option<&str>, eos: Option<&str>) -> ChatTemplate {
        self.bos_token = bos.unwrap_or_default().to_string();
        self.eos_token = eos.unwrap_or_default().to_string();
        self
    }

    /// Whether the template writes ChatML (`<|im_start|>` ... `<|im_end|>`).
    pub fn is_chatml(&self) -> bool {
        self.source.contains(START) && self.source.contains(END)
    }

    /// The system message a ChatML template inserts when the conversation starts without one:
    /// the text of a literal `<|im_start|>system\n...<|im_end|>` in the template.
    pub fn default_system_message(&self) -> Option<String> {
        let marker = format!("{START}system");
        let start = self.source.find(&marker)? + marker.len();
        let rest = &self.source[start..];
        let end = rest.find(END)?;
        let text = &rest[..end];
        // Only a literal message (no Jinja expression inside) is a default.
        if text.contains("{{") || text.contains('\'') && text.contains('+') {
            return None;
        }
        let text = text.replace("\\n", "\n");
        let text = text.strip_prefix('\n').unwrap_or(&text);
        (!text.is_empty()).then(|| text.to_string())
    }

    /// The prompt of `messages`: the template rendered, ending with the assistant's turn when
    /// `add_generation_prompt`. A template that does not parse, fails while rendering or calls
    /// `raise_exception` is an error with the template's message and line.
    pub fn apply(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let environment = template_environment();
        let template = environment
            .template_from_named_str("chat_template", &self.source)
            .map_err(|e| template_error("the template does not parse", &e))?;
        let context = TemplateContext {
            messages,
            add_generation_prompt,
            bos_token: &self.bos_token,
            eos_token: &self.eos_token,
        };
        template
            .render(Value::from_serialize(&context))
            .map_err(|e| template_error("rendering failed", &e))
    }
}

/// `ChatTemplate::apply: {what}: {error}`, with minijinja's chain of causes.
fn template_error(what: &str, error: &minijinja::Error) -> Error {
    let mut message = format!("{what}: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    Error::invalid("ChatTemplate::apply", message)
}

/// An environment configured as `transformers` configures Jinja2 for chat templates.
fn template_environment() -> Environment<'static> {
    let mut environment = Environment::new();
    environment.set_trim_blocks(true);
    environment.set_lstrip_blocks(true);
    environment.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    environment.add_function(
        "raise_exception",
        |message: String| -> std::result::Result<Value, minijinja::Error> {
            Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("raise_exception: {message}"),
            ))
        },
    );
    environment.add_function("strftime_now", |format: String| -> String {
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format_utc(seconds, &format)
    });
    environment
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The UTC calendar date `(year, month 1-12, day 1-31)` of a day count since 1970-01-01
/// (Howard Hinnant's days-to-civil algorithm).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `seconds` since the Unix epoch in UTC, written with Python's `strftime` directives `%Y`,
/// `%y`, `%m`, `%d`, `%-d`, `%b`, `%B`, `%H`, `%M`, `%S` and `%%`; other text is kept.
pub(crate) fn format_utc(seconds: u64, format: &str) -> String {
    let (year, month, day) = civil_date((seconds / 86_400) as i64);
    let time = seconds % 86_400;
    let name = MONTHS[(month - 1) as usize];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('b') => out.push_str(&name[..3]),
            Some('B') => out.push_str(name),
            Some('H') => out.push_str(&format!("{:02}", time / 3600)),
            Some('M') => out.push_str(&format!("{:02}", time / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", time % 60)),
            Some('%') => out.push('%'),
            Some('-') => match chars.next() {
                Some('d') => out.push_str(&day.to_string()),
                Some('m') => out.push_str(&month.to_string()),
                Some(other) => {
                    out.push_str("%-");
                    out.push(other);
                }
                None => out.push_str("%-"),
            },
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::format_utc;

    #[test]
    fn utc_dates_are_formatted_like_strftime() {
        // 2024-07-26 13:05:09 UTC.
        assert_eq!(
            format_utc(1_721_999_109, "%d %b %Y %H:%M:%S"),
            "26 Jul 2024 13:05:09"
        );
        // The epoch, a leap day and the end of a century.
        assert_eq!(format_utc(0, "%Y-%m-%d %B"), "1970-01-01 January");
        assert_eq!(format_utc(951_782_400, "%-d %b %y"), "29 Feb 00");
        assert_eq!(format_utc(4_107_542_399, "%Y-%m-%d %%"), "2100-02-28 %");
    }
}
