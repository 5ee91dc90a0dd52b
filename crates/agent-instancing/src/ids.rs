//! Fresh instance ids: short, readable, never colliding.

use agent_core::Instance;
use agent_data::Context;

/// The `n`-th id of the sequence (1-based): `①`…`⑳` (U+2460–2473), then
/// `㉑`…`㉟` (U+3251–325F) and `㊱`…`㊿` (U+32B1–32BF), then `#51`, `#52`, ….
///
/// ```
/// use agent_instancing::nth_id;
/// assert_eq!(nth_id(1), "①");
/// assert_eq!(nth_id(20), "⑳");
/// assert_eq!(nth_id(21), "㉑");
/// assert_eq!(nth_id(50), "㊿");
/// assert_eq!(nth_id(51), "#51");
/// ```
pub fn nth_id(n: usize) -> String {
    let circled = |base: u32, offset: usize| {
        u32::try_from(offset)
            .ok()
            .and_then(|o| char::from_u32(base + o))
            .map(String::from)
    };
    let id = match n {
        1..=20 => circled(0x2460, n - 1),
        21..=35 => circled(0x3251, n - 21),
        36..=50 => circled(0x32B1, n - 36),
        _ => None,
    };
    id.unwrap_or_else(|| format!("#{n}"))
}

/// `count` ids from the sequence of [`nth_id`] that no instance of
/// `context` uses, in sequence order.
pub fn fresh_ids(context: &Context, count: usize) -> Vec<Instance> {
    let taken: std::collections::HashSet<&str> =
        context.instances().map(Instance::as_str).collect();
    (1..)
        .map(nth_id)
        .filter(|id| !taken.contains(id.as_str()))
        .take(count)
        .filter_map(|id| Instance::new(id).ok())
        .collect()
}
