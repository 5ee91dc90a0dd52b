//! Merged (R28) and append (R30) rendering, with opaque renderers by type.

use crate::ChatMessage;
use agent_core::Method;
use agent_core::json::{Map, Value};
use agent_data::{Context, DataMessage, Identity, Message, PlanSort};
use std::collections::HashMap;
use std::sync::Arc;

/// How data reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RenderMode {
    /// One block per layer, at its first message, holding the folded view (R28).
    #[default]
    Merged,
    /// One block per data message, holding the written value, so output for
    /// earlier messages never changes as the context grows (R30).
    Append,
}

/// Renders opaque messages of one `type` (`plan`, `tool`, …).
pub trait OpaqueRenderer: Send + Sync {
    /// The chat message for `message` (its fields, `_`-prefixed ones
    /// included), or `None` to leave it out.
    fn render(&self, message: &Map) -> Option<ChatMessage>;
}

/// The default for opaque messages (R28): a `user` block `## {type}`
/// followed by the message as JSON without its `_`-prefixed fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericBlock;

impl OpaqueRenderer for GenericBlock {
    fn render(&self, message: &Map) -> Option<ChatMessage> {
        let kind = message
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let visible: Map = message
            .iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .map(|(k, v)| (k, v.clone()))
            .collect();
        Some(ChatMessage::new(
            "user",
            format!("## {kind}\n{}", pretty(&Value::Object(visible))),
        ))
    }
}

/// The line that follows an `input` block's header (R28).
pub const INPUT_LINE: &str = "This is the task's input: the structured prompt to work from.";

/// Turns a context into chat messages.
///
/// ```
/// use agent_data::Context;
/// use agent_render::{RenderMode, Renderer};
///
/// let ctx = Context::from_json(r#"[
///   {"type": "text", "text": "Greet the user"},
///   {"type": "data", "kind": "user", "data": {"name": "Ada"}},
///   {"type": "data", "kind": "user", "data": {"age": 36}, "_date": "hidden"}
/// ]"#)?;
/// let chat = Renderer::new().render(&ctx, RenderMode::Merged);
/// assert_eq!(chat.len(), 2);
/// assert_eq!(chat[1].text(), "## Data: ¶user\n{\n  \"name\": \"Ada\",\n  \"age\": 36\n}");
/// # Ok::<(), agent_data::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Renderer {
    opaque: HashMap<String, Arc<dyn OpaqueRenderer>>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut types: Vec<&String> = self.opaque.keys().collect();
        types.sort();
        f.debug_struct("Renderer").field("opaque", &types).finish()
    }
}

impl Renderer {
    /// A renderer with the generic block for every opaque type but `ran`
    /// (a runner's bookkeeping, R21b), which it leaves out.
    pub fn new() -> Self {
        Self::default()
    }

    /// Renders opaque messages of `type_name` with `renderer`.
    pub fn with_opaque(
        mut self,
        type_name: impl Into<String>,
        renderer: impl OpaqueRenderer + 'static,
    ) -> Self {
        self.opaque.insert(type_name.into(), Arc::new(renderer));
        self
    }

    /// The chat messages the model sees for `context` (R28–R30).
    pub fn render(&self, context: &Context, mode: RenderMode) -> Vec<ChatMessage> {
        // A layer's first held message is the first the walk meets: layers
        // are marked by position as it goes, without looking each one up
        // (which touched every layer's scattered bookkeeping).
        let mut met = vec![false; context.identities().len()];
        // Merged mode makes a block per layer, plus one per other message.
        let blocks = match mode {
            RenderMode::Merged => met.len(),
            RenderMode::Append => context.len(),
        };
        let mut out = Vec::with_capacity(blocks);
        // Where in `out` the newest plan of each sort went, so a later one
        // of its sort can take it out (D69: loop and worker plans).
        let mut plans: Vec<(PlanSort, Option<usize>)> = Vec::new();
        let mut superseded: Vec<usize> = Vec::new();
        for index in 0..context.len() {
            let layer = context.message_layer(index);
            let first = layer
                .and_then(|at| met.get_mut(at))
                .is_some_and(|met| !std::mem::replace(met, true));
            if mode == RenderMode::Merged && layer.is_some() {
                // Merged mode shows a layer once, at its first message, from
                // its folded view: the message itself need not be parsed.
                if let Some(identity) = context.message_identity(index).filter(|_| first) {
                    out.push(ChatMessage::new("user", layer_block(context, identity)));
                }
                continue;
            }
            match context.message(index) {
                Some(Message::Text(text)) => out.push(ChatMessage::new(text.role(), text.text())),
                Some(Message::Native(native)) => {
                    out.push(ChatMessage::native(native.into_fields()));
                }
                Some(Message::Opaque(opaque)) => {
                    let fields = opaque.fields();
                    let chat = match self.opaque.get(opaque.type_name()) {
                        Some(renderer) => renderer.render(fields),
                        // A runner's record that a call ran is bookkeeping
                        // (R21b), left out unless a renderer is registered.
                        None if opaque.type_name() == agent_data::RAN_TYPE => None,
                        None => GenericBlock.render(fields),
                    };
                    // Merged mode only: append mode keeps every earlier
                    // block as it was, so prompt caches survive (R30).
                    if let Some(sort) = opaque.plan_sort().filter(|_| mode == RenderMode::Merged) {
                        // The slot this plan's block takes, if it has one.
                        let at = chat.as_ref().map(|_| out.len());
                        match plans.iter_mut().find(|(s, _)| *s == sort) {
                            Some((_, newest)) => {
                                superseded.extend(std::mem::replace(newest, at));
                            }
                            None => plans.push((sort, at)),
                        }
                    }
                    out.extend(chat);
                }
                Some(Message::Data(data)) => {
                    out.push(ChatMessage::new("user", write_block(&data, first)));
                }
                None => {}
            }
        }
        if superseded.is_empty() {
            return out;
        }
        // A superseded plan stays in the log and is not shown (R28): the
        // model sees the plan it is working from, once.
        superseded.sort_unstable();
        let mut skip = superseded.into_iter().peekable();
        out.into_iter()
            .enumerate()
            .filter(|(i, _)| {
                let gone = skip.peek() == Some(i);
                if gone {
                    skip.next();
                }
                !gone
            })
            .map(|(_, chat)| chat)
            .collect()
    }
}

fn pretty(value: &Value) -> String {
    agent_core::json::to_string_pretty(value)
}

/// A block under construction: values are written straight into it.
struct Block(String);

impl Block {
    fn new(header: std::fmt::Arguments<'_>) -> Self {
        let mut text = String::with_capacity(256);
        let _ = std::fmt::Write::write_fmt(&mut text, header);
        Block(text)
    }

    fn line(&mut self, text: &str) {
        self.0.push('\n');
        self.0.push_str(text);
    }

    fn json(&mut self, value: &Value) {
        self.0.push('\n');
        agent_core::json::write_into(&mut self.0, value, agent_core::json::Style::Pretty);
    }

    fn finish(self) -> String {
        self.0
    }
}

/// R28: header, input line, the layer's own view, its own description and schema.
fn layer_block(context: &Context, identity: &Identity) -> String {
    let mut block = Block::new(format_args!("## Data: ¶{identity}"));
    if identity.kind.as_str() == "input" {
        block.line(INPUT_LINE);
    }
    block.json(context.layer_view(identity).unwrap_or(&Value::Null));
    if let Some(description) = context.layer_description(identity) {
        block.line(description);
    }
    if let Some(schema) = context.layer_schema(identity) {
        block.line(&format!("Schema for ¶{identity}:"));
        block.json(schema);
    }
    block.finish()
}

/// R30: one block per write: header with path and non-default method, the
/// written value, and the message's own description and schema.
fn write_block(data: &DataMessage, first: bool) -> String {
    let label = match data.instance() {
        Some(x) => format!("{}@{x}", data.kind()),
        None => data.kind().to_string(),
    };
    let default = if data.is_output() {
        Method::Set
    } else {
        Method::Merge
    };
    let method = if data.method() == default {
        String::new()
    } else {
        format!(" ({})", data.method())
    };
    let mut block = Block::new(format_args!(
        "## Data: ¶{label}{}{method}",
        data.destination()
    ));
    if first && data.kind().as_str() == "input" {
        block.line(INPUT_LINE);
    }
    block.json(data.value());
    if let Some(description) = data.description() {
        block.line(description);
    }
    if let Some(schema) = data.schema() {
        block.line(&format!("Schema for ¶{label}:"));
        block.json(schema);
    }
    block.finish()
}
