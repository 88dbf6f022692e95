#!/usr/bin/env python3
"""Render the chat templates of crates/models/tests/llama_chat_template.rs with Jinja2 set up
as transformers sets it up for apply_chat_template (sandboxed, trim_blocks, lstrip_blocks,
loop controls, raise_exception), and print the prompts the test expects.

    pip install jinja2
    python3 scripts/llm/chat_template_reference.py
"""

import pathlib
import re

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEST = pathlib.Path(__file__).resolve().parents[2] / "crates/models/tests/llama_chat_template.rs"


def rust_constant(source, name):
    """The text of a `const NAME: &str = "...";` Rust string literal."""
    literal = re.search(r"const " + name + r': &str = "(.*?)";\n', source, re.S).group(1)
    literal = re.sub(r"\\\n\s*", "", literal)  # line continuations
    return literal.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    return env


def main():
    source = TEST.read_text()
    env = environment()
    conversation = [
        {"role": "system", "content": "Be brief. "},
        {"role": "user", "content": " What is 2 + 2?\n"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3 + 3?"},
    ]
    llama3 = env.from_string(rust_constant(source, "LLAMA3_STYLE"))
    tokens = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    print("llama3, conversation:", repr(llama3.render(messages=conversation, add_generation_prompt=True, **tokens)))
    print("llama3, one turn:", repr(llama3.render(messages=[{"role": "user", "content": "Hi"}], add_generation_prompt=False, **tokens)))
    mistral = rust_constant(source, "MISTRAL_STYLE")
    turns = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"},
    ]
    tokens = {"bos_token": "<s>", "eos_token": "</s>"}
    for name, text in [("mistral", mistral), ("mistral, one line", mistral.replace("\n", ""))]:
        print(name + ":", repr(env.from_string(text).render(messages=turns, add_generation_prompt=True, **tokens)))
    try:
        env.from_string(mistral).render(messages=conversation, add_generation_prompt=True, **tokens)
    except jinja2.exceptions.TemplateError as error:
        print("mistral, system message raises:", error)


if __name__ == "__main__":
    main()
