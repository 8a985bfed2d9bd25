//! A test's tier said by one attribute (a dev-dependency only).
//!
//! Plain `cargo test` runs the pure tier; the other tiers are `#[ignore]`d tests that
//! `cargo test -- --ignored` (and `scripts/test.sh`) run. `#[ignore = "…"]` takes a literal
//! only, so the reason of each tier lives here, once, and a test names its tier instead of
//! pasting the sentence:
//!
//! ```text
//! use test_tier::live;
//!
//! #[live]                                   // #[test] #[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
//! fn bandwidth_on_node_0() { … }
//!
//! #[live("starts PostgreSQL 15 (root)")]    // #[test] #[ignore = "live tier: starts PostgreSQL 15 (root); scripts/test.sh runs it"]
//! fn sweep_rate() { … }
//! ```
//!
//! The attribute adds `#[test]` itself. An argument, a string literal, replaces the tier's
//! default of what the test needs.

use proc_macro::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};

/// What the live tier needs unless a test says otherwise.
const LIVE: &str = "runs on this machine (root for BPF, veth, huge pages)";
/// What the guest tier needs unless a test says otherwise.
const GUEST: &str = "boots a multi-node QEMU guest";
/// What the browser tier needs unless a test says otherwise.
const BROWSER: &str = "headless Chromium";

/// A live-tier test: on this machine, root where needed. `#[live]` or `#[live("what it needs")]`.
#[proc_macro_attribute]
pub fn live(args: TokenStream, item: TokenStream) -> TokenStream {
    tier("live", LIVE, args, item)
}

/// A guest-tier test: in a multi-node QEMU guest. `#[guest]` or `#[guest("what it needs")]`.
#[proc_macro_attribute]
pub fn guest(args: TokenStream, item: TokenStream) -> TokenStream {
    tier("guest", GUEST, args, item)
}

/// A browser-tier test: the HTML in headless Chromium. `#[browser]` or `#[browser("…")]`.
#[proc_macro_attribute]
pub fn browser(args: TokenStream, item: TokenStream) -> TokenStream {
    tier("browser", BROWSER, args, item)
}

/// `#[test] #[ignore = "TIER tier: NEEDS; scripts/test.sh runs it"] ITEM`.
fn tier(name: &str, default: &str, args: TokenStream, item: TokenStream) -> TokenStream {
    let needs = match needs(args) {
        Ok(needs) => needs.unwrap_or_else(|| default.to_string()),
        Err(message) => return compile_error(&message),
    };
    let reason = format!("{name} tier: {needs}; scripts/test.sh runs it");
    let mut out = TokenStream::new();
    out.extend(attribute(TokenStream::from(TokenTree::Ident(proc_macro::Ident::new(
        "test",
        proc_macro::Span::call_site(),
    )))));
    let ignore: TokenStream = [
        TokenTree::Ident(proc_macro::Ident::new("ignore", proc_macro::Span::call_site())),
        TokenTree::Punct(Punct::new('=', Spacing::Alone)),
        TokenTree::Literal(Literal::string(&reason)),
    ]
    .into_iter()
    .collect();
    out.extend(attribute(ignore));
    out.extend(item);
    out
}

/// The attribute's argument: nothing, or one plain string literal (its text, unescaped).
fn needs(args: TokenStream) -> Result<Option<String>, String> {
    let mut tokens = args.into_iter();
    let Some(first) = tokens.next() else { return Ok(None) };
    let usage = "a tier attribute takes nothing or one string literal: #[live(\"what it needs\")]";
    let (TokenTree::Literal(lit), None) = (first, tokens.next()) else { return Err(usage.into()) };
    let text = lit.to_string();
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return Err(usage.into());
    };
    if inner.contains('\\') {
        return Err("a tier's reason is plain text: no escapes".into());
    }
    Ok(Some(inner.to_string()))
}

/// `#[BODY]`.
fn attribute(body: TokenStream) -> TokenStream {
    [
        TokenTree::Punct(Punct::new('#', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Bracket, body)),
    ]
    .into_iter()
    .collect()
}

/// `compile_error!("MESSAGE");`
fn compile_error(message: &str) -> TokenStream {
    format!("compile_error!({message:?});").parse().unwrap_or_default()
}
