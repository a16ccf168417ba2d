//! The options inside `#[tool(…)]`, `#[resource(…)]`, `#[prompt(…)]`, `#[completion(…)]` and
//! `#[arg(…)]`: `key = value`, bare flags, and (for `#[resource]`) one leading string.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprLit, Ident, Lit, LitBool, LitStr, Result, Token};

/// One item between the parentheses.
pub enum Item {
    /// A string on its own: the URI of `#[resource("…")]`.
    Positional(LitStr),
    /// `key` alone.
    Flag(Ident),
    /// `key = value`.
    Value(Ident, Expr),
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> Result<Self> {
        if input.peek(LitStr) {
            return Ok(Item::Positional(input.parse()?));
        }
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Ok(Item::Value(key, input.parse()?))
        } else {
            Ok(Item::Flag(key))
        }
    }
}

/// The items of an attribute's arguments.
pub fn parse(tokens: TokenStream) -> Result<Vec<Item>> {
    let items = Punctuated::<Item, Token![,]>::parse_terminated.parse2(tokens)?;
    Ok(items.into_iter().collect())
}

/// Reads the items of `#[attr(…)]` one key at a time, refusing unknown and repeated keys.
pub struct Options {
    items: Vec<Item>,
    known: &'static [&'static str],
}

impl Options {
    pub fn new(attr: &'static str, tokens: TokenStream, known: &'static [&'static str]) -> Result<Self> {
        let items = parse(tokens)?;
        let mut seen: Vec<String> = Vec::new();
        for item in &items {
            let key = match item {
                Item::Positional(lit) if !known.contains(&"") => {
                    return Err(Error::new(
                        lit.span(),
                        format!(
                            "`#[{attr}]` takes no string on its own; expected `key = value` with a key among: {}",
                            known.join(", ")
                        ),
                    ));
                }
                Item::Positional(_) => continue,
                Item::Flag(key) | Item::Value(key, _) => key,
            };
            let name = key.to_string();
            if !known.contains(&name.as_str()) {
                let keys: Vec<&str> = known.iter().copied().filter(|k| !k.is_empty()).collect();
                return Err(Error::new(
                    key.span(),
                    format!("unknown `#[{attr}]` option `{name}`; expected one of: {}", keys.join(", ")),
                ));
            }
            if seen.contains(&name) {
                return Err(Error::new(key.span(), format!("`{name}` is given twice")));
            }
            seen.push(name);
        }
        Ok(Options { items, known })
    }

    fn find(&self, key: &str) -> Option<&Item> {
        debug_assert!(self.known.contains(&key), "{key} is not a known option");
        self.items.iter().find(|i| matches!(i, Item::Flag(k) | Item::Value(k, _) if k == key))
    }

    /// The leading string(s), in order.
    pub fn positional(&self) -> Vec<&LitStr> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Positional(l) => Some(l),
                _ => None,
            })
            .collect()
    }

    /// `key = "string"`.
    pub fn string(&self, key: &str) -> Result<Option<LitStr>> {
        match self.find(key) {
            None => Ok(None),
            Some(Item::Value(_, Expr::Lit(ExprLit { lit: Lit::Str(s), .. }))) => Ok(Some(s.clone())),
            Some(Item::Value(_, e)) => {
                Err(Error::new(e.span(), format!("`{key}` takes a string literal: `{key} = \"…\"`")))
            }
            Some(Item::Flag(k)) => Err(Error::new(k.span(), format!("`{key}` needs a value: `{key} = \"…\"`"))),
            Some(Item::Positional(_)) => Ok(None),
        }
    }

    /// A bare `key` (true), `key = true` or `key = false`; `None` when absent.
    pub fn flag(&self, key: &str) -> Result<Option<(bool, Span)>> {
        match self.find(key) {
            None | Some(Item::Positional(_)) => Ok(None),
            Some(Item::Flag(k)) => Ok(Some((true, k.span()))),
            Some(Item::Value(k, Expr::Lit(ExprLit { lit: Lit::Bool(LitBool { value, .. }), .. }))) => {
                Ok(Some((*value, k.span())))
            }
            Some(Item::Value(_, e)) => {
                Err(Error::new(e.span(), format!("`{key}` takes `true` or `false` (or nothing, meaning true)")))
            }
        }
    }

    /// `key` alone (`Some(None)`) or `key = <expression>` (`Some(Some(expr))`).
    pub fn expr(&self, key: &str) -> Option<(Ident, Option<Expr>)> {
        match self.find(key) {
            Some(Item::Flag(k)) => Some((k.clone(), None)),
            Some(Item::Value(k, e)) => Some((k.clone(), Some(e.clone()))),
            _ => None,
        }
    }
}
