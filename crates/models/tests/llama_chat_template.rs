//! `ChatTemplate`: models' Jinja chat templates rendered with their messages, special tokens and
//! generation prompt — a Llama-3-style and a Mistral-style template written here with the
//! prompts they must give, Python string and dict methods, `raise_exception` and broken
//! templates as errors, the ChatML fallback, and (when `ANYGRAD_SMOLLM2_GGUF=PATH` names the
//! file) SmolLM2-135M-Instruct's own template giving exactly the ChatML prompts.
//! `scripts/llm/chat_template_reference.py` renders the Llama-3-style and Mistral-style
//! templates with Jinja2 set up as `transformers` sets it up: it prints the prompts expected
//! here.

use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{ChatMessage, ChatTemplate, LlamaTokenizer};
use anygrad_testing::{skip_unless_required, Requirement};

/// A Llama-3-style template: headers around each role, contents trimmed, `<|eot_id|>` after
/// each message, the BOS token before the first.
const LLAMA3_STYLE: &str = "{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/// A Mistral-style template: `[INST]` around user turns, EOS after assistant turns, strictly
/// alternating roles (anything else raises).
const MISTRAL_STYLE: &str = "{{ bos_token }}{% for message in messages %}
{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
{% endif %}
{% if message['role'] == 'user' %}
{{ '[INST] ' + message['content'] + ' [/INST]' }}
{% elif message['role'] == 'assistant' %}
{{ message['content'] + eos_token }}
{% else %}
{{ raise_exception('Only user and assistant roles are supported!') }}
{% endif %}
{% endfor %}";

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new("system", "Be brief. "),
        ChatMessage::new("user", " What is 2 + 2?\n"),
        ChatMessage::new("assistant", "4"),
        ChatMessage::new("user", "And 3 + 3?"),
    ]
}

#[test]
fn llama3_style_template_trims_and_frames_each_message() {
    let template = ChatTemplate::new(LLAMA3_STYLE)
        .with_special_tokens(Some("<|begin_of_text|>"), Some("<|eot_id|>"));
    assert_eq!(
        template.apply(&conversation(), true).expect("apply"),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nAnd 3 + 3?<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(
        template
            .apply(&[ChatMessage::new("user", "Hi")], false)
            .expect("apply"),
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
    );
}

#[test]
fn mistral_style_template_with_trimmed_blocks_and_raised_errors() {
    let template = ChatTemplate::new(MISTRAL_STYLE).with_special_tokens(Some("<s>"), Some("</s>"));
    let turns = [
        ChatMessage::new("user", "Hi"),
        ChatMessage::new("assistant", "Hello!"),
        ChatMessage::new("user", "Bye"),
    ];
    // The block tags' lines leave nothing behind (trim_blocks, lstrip_blocks); the newline
    // after an expression stays, as in Jinja2.
    assert_eq!(
        template.apply(&turns, true).expect("apply"),
        "<s>[INST] Hi [/INST]\nHello!</s>\n[INST] Bye [/INST]\n"
    );
    // Written on one line, as such templates are shipped, it gives the plain prompt.
    let one_line = ChatTemplate::new(&MISTRAL_STYLE.replace('\n', ""))
        .with_special_tokens(Some("<s>"), Some("</s>"));
    assert_eq!(
        one_line.apply(&turns, true).expect("apply"),
        "<s>[INST] Hi [/INST]Hello!</s>[INST] Bye [/INST]"
    );
    // A system message: the template's own error, as an error, not a panic.
    let error = template
        .apply(&conversation(), true)
        .expect_err("system message accepted");
    let message = error.to_string();
    assert!(
        message.contains("ChatTemplate::apply")
            && message.contains("Conversation roles must alternate"),
        "{message}"
    );
}

#[test]
fn python_methods_loops_and_undefined_variables() {
    let template = ChatTemplate::new(
        "{% for message in messages %}{% if message.content.startswith('/') %}{% continue %}{% endif %}\
         {{ message.role.upper() }}={{ message.content.strip() }}|{% endfor %}\
         {% for key, value in {'a': 1}.items() %}{{ key }}{{ value }}{% endfor %}\
         {% if tools is defined and tools %}TOOLS{% endif %}{{ loop_count | default('') }}",
    );
    let messages = [
        ChatMessage::new("user", "  x  "),
        ChatMessage::new("user", "/skip"),
        ChatMessage::new("assistant", "y"),
    ];
    assert_eq!(
        template.apply(&messages, false).expect("apply"),
        "USER=x|ASSISTANT=y|a1"
    );
    // `strftime_now` gives a date such as `07 Dec 2026`.
    let date = ChatTemplate::new("{{ strftime_now('%d %b %Y') }}")
        .apply(&[], false)
        .expect("apply");
    let parts: Vec<&str> = date.split(' ').collect();
    assert!(
        parts.len() == 3 && parts[0].len() == 2 && parts[1].len() == 3 && parts[2].len() == 4,
        "{date}"
    );
}

#[test]
fn broken_templates_are_errors() {
    for (source, expected) in [
        (
            "{% for message in messages %}{{ message.content }}",
            "does not parse",
        ),
        ("{{ messages[0].content + 1 }}", "rendering failed"),
        ("{{ raise_exception('no tools here') }}", "no tools here"),
    ] {
        let error = ChatTemplate::new(source)
            .apply(&[ChatMessage::new("user", "x")], true)
            .expect_err(source);
        let message = error.to_string();
        assert!(message.contains(expected), "{source}: {message}");
    }
}

#[test]
fn chatml_is_the_fallback() {
    let template = ChatTemplate::chatml();
    assert!(template.is_chatml());
    assert_eq!(template.default_system_message(), None);
    assert_eq!(
        template
            .apply(
                &[
                    ChatMessage::new("system", "S"),
                    ChatMessage::new("user", "U")
                ],
                true
            )
            .expect("apply"),
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    );
}

/// The ChatML prompt the previous hard-coded formatter gave: the template's default system
/// message first when the conversation has none, each message framed, then the assistant's
/// turn.
fn chatml_by_hand(system: &str, messages: &[ChatMessage], add_generation_prompt: bool) -> String {
    let mut prompt = String::new();
    if messages.first().is_some_and(|m| m.role != "system") {
        prompt.push_str(&format!("<|im_start|>system\n{system}<|im_end|>\n"));
    }
    for message in messages {
        prompt.push_str(&format!(
            "<|im_start|>{}\n{}<|im_end|>\n",
            message.role, message.content
        ));
    }
    if add_generation_prompt {
        prompt.push_str("<|im_start|>assistant\n");
    }
    prompt
}

#[test]
fn smollm2_template_gives_the_chatml_prompts() {
    let Some(path) = std::env::var_os("ANYGRAD_SMOLLM2_GGUF") else {
        skip_unless_required(
            Requirement::Data,
            "smollm2_template_gives_the_chatml_prompts",
            "set ANYGRAD_SMOLLM2_GGUF to SmolLM2-135M-Instruct.Q4_1.gguf",
        );
        return;
    };
    let file = GgufFile::open(path).expect("open");
    let tokenizer = LlamaTokenizer::from_gguf(&file).expect("tokenizer");
    let template = tokenizer.chat_template.as_ref().expect("template");
    assert_eq!(template.bos_token, "<|im_start|>");
    let system = template
        .default_system_message()
        .expect("default system message");
    assert_eq!(
        system,
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    );
    let conversations = [
        vec![ChatMessage::new("user", "What is the capital of France?")],
        vec![
            ChatMessage::new("system", "Answer in French."),
            ChatMessage::new("user", "Hello"),
        ],
        vec![
            ChatMessage::new("user", "Hi"),
            ChatMessage::new("assistant", "Hello! How can I help?"),
            ChatMessage::new("user", "  spaces and\nnew lines  "),
        ],
    ];
    for messages in &conversations {
        for add_generation_prompt in [true, false] {
            assert_eq!(
                template
                    .apply(messages, add_generation_prompt)
                    .expect("apply"),
                chatml_by_hand(&system, messages, add_generation_prompt),
                "{messages:?}"
            );
        }
    }
}
