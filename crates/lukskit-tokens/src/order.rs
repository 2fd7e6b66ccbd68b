//! Which tokens are tried, on which keyslots, in which order.

use crate::TokenRequest;
use lukskit_format::luks2::Token;
use lukskit_volume::Volume;

/// The tokens the token step would try, each with the keyslots to try it on, in
/// cryptsetup's order: those of `token_id` / `token_type`, with `key_slot` only those for
/// that keyslot; without `token_id` or `key_slot`, tokens for a `prefer` keyslot first, then
/// tokens for `normal` ones, never `ignore` keyslots (LUKS2_token_open_any's priority
/// passes). Empty for a LUKS1 volume.
pub fn candidates(vol: &Volume, req: &TokenRequest) -> Vec<(Token, Vec<u32>)> {
    let Some(h) = vol.luks2() else {
        return Vec::new();
    };
    // A header that loaded has valid tokens; should one not parse, the token step has
    // nothing to try and the passphrase still works.
    let Ok(mut v) = h.tokens() else {
        return Vec::new();
    };
    v.retain(|t| {
        req.token_id.is_none_or(|id| t.id == id)
            && req
                .token_type
                .as_deref()
                .is_none_or(|ty| t.kind.as_str() == ty)
            && req.key_slot.is_none_or(|s| t.keyslots.contains(&s))
    });
    v.sort_by_key(|t| t.id);
    // Priority of each keyslot: 0 ignore, 1 normal (the default), 2 prefer.
    let prio = |s: u32| -> u32 {
        h.keyslot(s)
            .ok()
            .flatten()
            .map_or(0, |k| k.priority.unwrap_or(1))
    };
    if let Some(s) = req.key_slot {
        if req.token_id.is_none() && prio(s) == 0 {
            return Vec::new();
        }
        return v.into_iter().map(|t| (t, vec![s])).collect();
    }
    let mut out: Vec<(Token, Vec<u32>)> = Vec::new();
    for want in [2, 1] {
        for t in &v {
            let slots: Vec<u32> = if req.token_id.is_some() {
                if want == 1 {
                    continue;
                }
                let mut all = t.keyslots.clone();
                all.sort_by_key(|&s| std::cmp::Reverse(prio(s)));
                all
            } else {
                t.keyslots
                    .iter()
                    .copied()
                    .filter(|&s| prio(s) == want)
                    .collect()
            };
            if !slots.is_empty() && !out.iter().any(|(u, _)| u.id == t.id) {
                out.push((t.clone(), slots));
            }
        }
    }
    out
}
