//! The attributes of `test-tier` (use them through it: `use test_tier::live;`): each expands
//! to `#[test] #[ignore = "TIER tier: NEEDS; scripts/test.sh runs it"]` and a body that first
//! takes its file's turn (`test_tier::enter`).

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
    out.extend(take_turn(item));
    out
}

/// The test function with `let _turn = ::test_tier::enter(file!());` first in its body (the
/// body is the item's last token, a brace group).
fn take_turn(item: TokenStream) -> TokenStream {
    let mut tokens: Vec<TokenTree> = item.into_iter().collect();
    let Some(TokenTree::Group(body)) = tokens.pop() else {
        return compile_error("a tier attribute goes on a test function");
    };
    if body.delimiter() != Delimiter::Brace {
        return compile_error("a tier attribute goes on a test function");
    }
    let Ok(mut inner) = "let _turn = ::test_tier::enter(::core::file!());".parse::<TokenStream>()
    else {
        return compile_error("test-tier: the turn statement does not parse");
    };
    inner.extend(body.stream());
    let mut new_body = Group::new(Delimiter::Brace, inner);
    new_body.set_span(body.span());
    tokens.push(TokenTree::Group(new_body));
    tokens.into_iter().collect()
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
