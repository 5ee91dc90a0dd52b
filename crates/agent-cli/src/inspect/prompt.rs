//! What the model sees at a point (`/api/prompt`), rendered once per point
//! and mode and answered a page at a time: at 100,000 messages the merged
//! prompt runs to millions of tokens, which no page can show whole, and
//! counting them takes longer than rendering, so the count is asked for
//! on its own.

use agent_core::json;
use agent_core::json::Value;
use agent_data::Context;
use agent_render::{ChatMessage, RenderMode, Renderer};
use std::sync::{Arc, OnceLock};

/// Chat messages in a page when `limit` is not given, and the most.
const DEFAULT_MESSAGES: usize = 20;
const MAX_MESSAGES: usize = 200;

/// Characters of each message's text in a page when `chars` is not given,
/// and the most (a longer text is cut, and says how long it is).
const DEFAULT_CHARS: usize = 2_000;
const MAX_CHARS: usize = 1_000_000;

/// The query of `/api/prompt`.
#[derive(serde::Deserialize)]
pub(super) struct PromptQuery {
    mode: Option<String>,
    from: Option<usize>,
    limit: Option<usize>,
    chars: Option<usize>,
    /// `1`: count the whole payload's tokens too.
    tokens: Option<u8>,
}

/// A point's prompt, rendered; its tokens counted once asked for, each
/// message's once it is first shown.
struct Rendered {
    chat: Vec<ChatMessage>,
    tokens: OnceLock<Result<usize, String>>,
    counted: Vec<OnceLock<usize>>,
}

/// The prompt of the point and mode last asked about.
#[derive(Default)]
pub(super) struct Prompts {
    last: super::past::Last<(usize, RenderMode), Arc<Rendered>>,
}

impl Prompts {
    /// A page of what the model sees of `context` (the context at point
    /// `at`), as `query` asks.
    pub(super) fn page(
        &self,
        context: &Context,
        at: usize,
        query: &PromptQuery,
    ) -> Result<Value, String> {
        let mode_name = query.mode.as_deref().unwrap_or("merged");
        let mode = match mode_name {
            "merged" => RenderMode::Merged,
            "append" => RenderMode::Append,
            other => {
                return Err(format!(
                    "mode {}: expected merged or append",
                    agent_core::quoted(other)
                ));
            }
        };
        let rendered = self.rendered(context, at, mode);
        let tokens = match query.tokens {
            None | Some(0) => None,
            Some(_) => Some(
                rendered
                    .tokens
                    .get_or_init(|| whole_tokens(&rendered.chat))
                    .clone()?,
            ),
        };
        let from = query.from.unwrap_or(0).min(rendered.chat.len());
        let limit = query.limit.unwrap_or(DEFAULT_MESSAGES).min(MAX_MESSAGES);
        let chars = query.chars.unwrap_or(DEFAULT_CHARS).min(MAX_CHARS);
        let messages: Vec<Value> = rendered
            .chat
            .iter()
            .enumerate()
            .skip(from)
            .take(limit)
            .map(|(index, m)| {
                let text = m.text();
                let shown = text
                    .char_indices()
                    .nth(chars)
                    .map_or(text, |(end, _)| &text[..end]);
                json!({
                    "index": index,
                    "role": m.role(),
                    "text": shown,
                    "bytes": text.len(),
                    "cut": shown.len() < text.len(),
                    "tokens": rendered.counted.get(index).map(|count| {
                        *count.get_or_init(|| agent_render::count_tokens(text))
                    }),
                })
            })
            .collect();
        Ok(json!({
            "mode": mode_name,
            "encoding": "o200k_base",
            "count": rendered.chat.len(),
            "from": from,
            "messages": messages,
            "tokens": tokens,
        }))
    }

    /// `context` rendered in `mode`: the one kept when it is of `at` and
    /// `mode`, else rendered now (and kept in its place).
    fn rendered(&self, context: &Context, at: usize, mode: RenderMode) -> Arc<Rendered> {
        self.last.get((at, mode), || {
            let chat = Renderer::new().render(context, mode);
            let counted = chat.iter().map(|_| OnceLock::new()).collect();
            Arc::new(Rendered {
                chat,
                tokens: OnceLock::new(),
                counted,
            })
        })
    }
}

/// The tokens of the whole OpenAI payload of `chat` (the count `agentctx
/// render --tokens` prints).
fn whole_tokens(chat: &[ChatMessage]) -> Result<usize, String> {
    let payload = agent_render::payload(chat, agent_render::PayloadFormat::OpenAi)
        .map_err(|e| e.to_string())?;
    Ok(agent_render::count_tokens(&payload.to_text(false)))
}
