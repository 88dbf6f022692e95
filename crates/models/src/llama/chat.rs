//! [`ChatTemplate`]: turning chat messages into a prompt. The full Jinja language of
//! Hugging Face chat templates is not implemented: the ChatML format (`<|im_start|>role\n
//! content<|im_end|>\n` per message, then `<|im_start|>assistant\n`), used by SmolLM2, Qwen
//! and others, is recognized in the template, together with the default system message a
//! template inserts when the conversation has none (SmolLM2's "You are a helpful AI
//! assistant named SmolLM, trained by Hugging Face"). Other templates are refused with an
//! error naming what is supported.

use anygrad_core::{Error, Result};

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// A model's chat template (its Jinja source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The Jinja source, as the model ships it.
    pub source: String,
}

const START: &str = "<|im_start|>";
const END: &str = "<|im_end|>";

impl ChatTemplate {
    /// A template of Jinja `source`.
    pub fn new(source: &str) -> ChatTemplate {
        ChatTemplate {
            source: source.to_string(),
        }
    }

    /// Whether the template is ChatML.
    pub fn is_chatml(&self) -> bool {
        self.source.contains(START) && self.source.contains(END)
    }

    /// The system message the template inserts when the conversation starts without one: the
    /// text of a literal `<|im_start|>system\n...<|im_end|>` in the template.
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

    /// The prompt of `messages`, ending with the assistant's turn when
    /// `add_generation_prompt`.
    pub fn apply(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        if !self.is_chatml() {
            return Err(Error::invalid(
                "ChatTemplate::apply",
                "only ChatML templates (<|im_start|>role ... <|im_end|>) are supported yet",
            ));
        }
        let mut prompt = String::new();
        if messages.first().is_some_and(|m| m.role != "system") {
            if let Some(system) = self.default_system_message() {
                prompt.push_str(&format!("{START}system\n{system}{END}\n"));
            }
        }
        for message in messages {
            prompt.push_str(&format!(
                "{START}{}\n{}{END}\n",
                message.role, message.content
            ));
        }
        if add_generation_prompt {
            prompt.push_str(&format!("{START}assistant\n"));
        }
        Ok(prompt)
    }
}
