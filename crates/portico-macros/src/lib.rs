//! Attribute macros for Portico: typed tools, resources, prompts and completions as plain
//! functions. Use them through the `portico-mcp` package (library `portico`) with its `macros`
//! feature: `#[portico::tool]`, …
//!
//! Macros are sugar: each expands to the builder calls a user could write by hand (see "What it
//! expands to" below), so anything the macros do not cover can be written with the builder
//! next to them.
//!
//! # A toolbox: `#[tools]` on an `impl` block
//!
//! ```ignore
//! use portico::schema::Implementation;
//! use portico::server::{Json, RequestContext, Server};
//!
//! struct Calculator;
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Quotient { value: f64 }
//!
//! #[portico::tools]
//! impl Calculator {
//!     /// Adds two numbers.
//!     #[tool]
//!     async fn add(&self, a: i64, b: i64) -> String {
//!         (a + b).to_string()
//!     }
//!
//!     /// Divides `a` by `b`.
//!     #[tool(read_only)]
//!     async fn divide(&self, a: f64, /** must not be 0 */ b: f64) -> Result<Json<Quotient>, String> {
//!         if b == 0.0 { Err("division by zero".into()) } else { Ok(Json(Quotient { value: a / b })) }
//!     }
//! }
//!
//! let server = Server::builder(Implementation::new("calc", "1.0.0")).toolbox(Calculator).build();
//! ```
//!
//! (`ignore`d here only because this crate cannot depend on `portico`; the same code is the
//! `macros` example of `portico` and is compiled by its tests.)
//!
//! `#[tools]` implements `portico::server::ToolBox` for the type: `ToolBox::tools()` lists the
//! tool definitions and `register(self: Arc<Self>, builder)` adds every handler, each holding a
//! clone of the `Arc`. Methods take `&self`, `self: Arc<Self>` or no receiver. Inside the block
//! write the inner attributes bare (`#[tool]`, `#[resource(…)]`, `#[prompt]`,
//! `#[completion(…)]`): `#[tools]` reads and removes them, nothing needs importing.
//!
//! # A free function: `#[tool]` (and `#[resource]`, `#[prompt]`, `#[completion]`)
//!
//! ```ignore
//! /// Greets someone.
//! #[portico::tool]
//! async fn greet(/// Who to greet.
//!                name: String) -> String {
//!     format!("Hello, {name}!")
//! }
//!
//! let server = greet::register(Server::builder(info)).build();
//! let definition: portico::schema::Tool = greet::tool();
//! ```
//!
//! The function stays as written (callable, testable). Next to it, in the type namespace, the
//! macro declares `greet` as an uninhabited enum holding `greet::tool()` (the definition) and
//! `greet::register(builder) -> builder`. (`resource()` or `resource_template()`, `prompt()`
//! for the other kinds; a completion has `register` only.)
//!
//! # Tools
//!
//! - **Description**: the doc comment (or `#[tool(description = "…")]`); a tool without one
//!   is a compile error, because the model chooses tools by it. `#[tool(no_description)]` opts
//!   out.
//! - **Options**: `name = "…"` (default: the function's name), `title = "…"`,
//!   `description = "…"`, `structured`, and the annotation hints `read_only`, `destructive`,
//!   `idempotent`, `open_world` (bare for `true`, or `= false`).
//! - **Parameters** are the arguments: their types are decoded with serde and described by
//!   schemars (the input schema is derived once per tool and cached:
//!   `portico::server::input_schema`). Doc comments on parameters become the properties'
//!   descriptions; `Option<T>` parameters are optional; `#[arg(default)]` or
//!   `#[arg(default = expr)]` makes one optional with a JSON Schema `default`;
//!   `#[arg(name = "…")]` renames it on the wire; `#[serde(…)]` and `#[schemars(…)]` are
//!   forwarded. `&str` and `Option<&str>` are accepted (decoded as `String`).
//! - **Injected parameters**, by type and not part of the schema: `RequestContext` or
//!   `&RequestContext` (progress, logging, cancellation, asking the client for input);
//!   `Extension<T>` for any request extension by type (the principal an authorization layer
//!   attached, a tenant a middleware resolved): a request without a `T` fails with an error
//!   naming `T` before the function runs (a tool error for tools, -32603 elsewhere).
//! - **The return type decides the result**: anything `IntoCallToolResult` (`String`,
//!   `&'static str`, `ContentBlock`, `Vec<ContentBlock>`, `CallToolResult`), `Json<T>` for
//!   structured content with a text copy and an `outputSchema` derived from `T`, and a `Result`
//!   of these, whose `Err` becomes a tool execution error (`isError: true`) with its message.
//!   `#[tool(structured)]` sends a plain `T` (or the `Ok` of a `Result<T, E>`) as `Json<T>`.
//!
//! # Resources
//!
//! `#[resource("users://{id}/profile", name = "…", title = "…", description = "…", mime_type =
//! "…")]`. The URI template is checked at compile time (RFC 6570, the rules of
//! `portico::server::UriTemplate`). Each parameter binds the template variable of its name (or
//! `#[arg(name = "…")]`), parsed with `FromStr`; a value that does not parse is an invalid-params
//! error (-32602) saying which variable and why. `Option<T>` binds an optional variable (such as
//! `{?page}`). A URI without variables is a static resource. `RequestContext` and
//! `ResourceRequest` (the URI read) may be injected. Return a `String` (text with the declared
//! MIME type), `Json<T>`, `ResourceContents`, `Vec<ResourceContents>`, `ReadResourceResult`, or a
//! `Result` of one of these whose error converts into `HandlerError`
//! (`portico::server::ResourceOutput`).
//!
//! # Prompts
//!
//! `#[prompt(name = "…", title = "…", description = "…")]`: each parameter is a prompt argument
//! (its doc comment the description; required unless `Option<T>` or `#[arg(default…)]`), parsed
//! from the client's string with `FromStr`. Return a `String` (one user message),
//! `PromptMessage`, `Vec<PromptMessage>`, `GetPromptResult`, or a `Result` of one of these
//! (`portico::server::PromptOutput`).
//!
//! # Completions
//!
//! `#[completion(prompt = "review", arg = "language")]` or
//! `#[completion(resource = "users://{id}/profile", arg = "id")]` on a function taking the
//! partial value (`String` or `&str`), and optionally `&CompleteRequestParams` (for the other
//! arguments already filled in) and `&RequestContext`; it returns `Vec<String>`, `Vec<&str>`,
//! `Completion`, `CompleteResult` or a `Result` of these. Registered with
//! `ServerBuilder::complete_argument`, which composes: every completion function answers its own
//! argument.
//!
//! # What it expands to
//!
//! For
//!
//! ```ignore
//! /// Greets someone.
//! #[portico::tool(read_only)]
//! async fn greet(/// Who to greet.
//!                name: String, #[arg(default = 1)] times: u32, cx: &RequestContext) -> String {
//!     format!("Hello, {name}! ").repeat(times as usize)
//! }
//! ```
//!
//! the macro writes (names shortened) what one would write by hand:
//!
//! ```ignore
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct GreetArgs {
//!     #[schemars(description = "Who to greet.")]
//!     name: String,
//!     #[serde(default = "default_times")]
//!     times: u32,
//! }
//! fn default_times() -> u32 { 1 }
//!
//! fn greet_tool() -> Tool {
//!     Tool::new("greet", portico::server::input_schema::<GreetArgs>().clone())
//!         .with_description("Greets someone.")
//!         .with_annotations(ToolAnnotations::new().with_read_only(true))
//! }
//!
//! builder.tool(greet_tool(), move |args: GreetArgs, cx: RequestContext| async move {
//!     greet(args.name, args.times, &cx).await.into_call_tool_result()
//! })
//! ```
//!
//! A resource becomes `builder.resource_template(ResourceTemplate::new(uri, name)…, |req:
//! ResourceRequest, cx| …)` parsing `req.var("id")`; a prompt becomes `builder.prompt(Prompt::new
//! (name).with_argument(…), |args: BTreeMap<String, String>, cx| …)`; a completion becomes
//! `builder.complete_argument(CompletionReference::prompt(name), arg, |params, cx| …)`.
//!
//! The expansion names the library as `::portico`, which is what the `portico-mcp` package
//! provides: depend on it without renaming it.
//!
//! Why the macros are shaped this way (and how they differ from rmcp's): `design/macros.md` in
//! the repository.
#![deny(missing_docs)]

mod expand;
mod model;
mod options;
mod uri;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Error, ImplItem, ItemFn, ItemImpl, Meta};

use expand::{Ctx, krate};
use model::{Errors, Handler, Kind, Opts, Target};

/// A tool: a function whose parameters are the tool's arguments. See the crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Tool, attr.into(), item.into()).into()
}

/// A resource or resource template: `#[resource("users://{id}/profile")]`. See the crate docs.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Resource, attr.into(), item.into()).into()
}

/// A prompt whose parameters are its arguments. See the crate docs.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Prompt, attr.into(), item.into()).into()
}

/// Completion of a prompt argument or template variable:
/// `#[completion(prompt = "review", arg = "language")]`. See the crate docs.
#[proc_macro_attribute]
pub fn completion(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Completion, attr.into(), item.into()).into()
}

/// An `impl` block whose `#[tool]`, `#[resource]`, `#[prompt]` and `#[completion]` methods are
/// registered together: implements `portico::server::ToolBox`. See the crate docs.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    toolbox(attr.into(), item.into()).into()
}

fn free(kind: Kind, attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let what = kind.attr();
    let mut f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e =
                Error::new(item.span(), format!("`#[{what}]` goes on a function (or, inside `#[tools]`, a method)"));
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let h = match Handler::parse(kind, attr, &f.attrs, &mut f.sig, false) {
        Ok(h) => h,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#f #e);
        }
    };
    let krate = krate();
    let x = expand::expand(&h, &Ctx { self_ty: None });
    let ident = &h.ident;
    let name = ident.to_string();
    let vis = &f.vis;
    let items = &x.items;
    let register = &x.register;
    let (accessor, noun) = match (&h.opts, &x.definition) {
        (Opts::Tool(_), Some((def, ty))) => (quote!(pub fn tool() -> #ty { #def() }), "tool"),
        (Opts::Resource(r), Some((def, ty))) if r.variables.is_empty() => {
            (quote!(pub fn resource() -> #ty { #def() }), "resource")
        }
        (Opts::Resource(_), Some((def, ty))) => {
            (quote!(pub fn resource_template() -> #ty { #def() }), "resource template")
        }
        (Opts::Prompt(_), Some((def, ty))) => (quote!(pub fn prompt() -> #ty { #def() }), "prompt"),
        _ => (quote!(), "completion"),
    };
    let doc =
        format!("The {noun} `{name}` (from `#[portico::{what}]`): `{name}::register(builder)` adds it to a server.");
    let accessor_doc = format!("The definition of the {noun} `{name}`, as listed to clients.");
    let register_doc = format!("Adds the {noun} `{name}` and its handler to `builder`.");
    quote! {
        #f
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug)]
        #vis enum #ident {}
        const _: () = {
            #items
            #[allow(dead_code)]
            impl #ident {
                #[doc = #accessor_doc]
                #accessor
                #[doc = #register_doc]
                pub fn register(builder: #krate::server::ServerBuilder) -> #krate::server::ServerBuilder {
                    #register
                }
            }
        };
    }
}

fn toolbox(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let mut imp: ItemImpl = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(_) => {
            let e =
                Error::new(item.span(), "`#[tools]` goes on an inherent `impl` block: `#[tools] impl MyServer { … }`");
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.push(Error::new(attr.span(), "`#[tools]` takes no options; options go on each `#[tool(…)]`"));
    }
    if let Some((_, path, _)) = &imp.trait_ {
        errors.push(Error::new(path.span(), "`#[tools]` goes on an inherent `impl` block, not a trait impl"));
    }
    if !imp.generics.params.is_empty() || imp.generics.where_clause.is_some() {
        errors.push(Error::new(imp.generics.span(), "`#[tools]` does not support generic `impl` blocks"));
    }
    let self_ty = (*imp.self_ty).clone();
    let mut handlers = Vec::new();
    for item in imp.items.iter_mut() {
        let (attrs, is_fn) = match item {
            ImplItem::Fn(f) => (&mut f.attrs, true),
            ImplItem::Const(c) => (&mut c.attrs, false),
            ImplItem::Type(t) => (&mut t.attrs, false),
            _ => continue,
        };
        let mut found = Vec::new();
        attrs.retain(|a| match Kind::from_attr(a) {
            Some(k) => {
                found.push((k, a.clone()));
                false
            }
            None => true,
        });
        let Some((kind, attr)) = found.first().cloned() else { continue };
        if let Some((k, a)) = found.get(1) {
            errors.push(Error::new(
                a.span(),
                format!("a method is one thing: `#[{}]` and `#[{}]` cannot both apply", kind.attr(), k.attr()),
            ));
        }
        if !is_fn {
            errors.push(Error::new(attr.span(), format!("`#[{}]` goes on a method", kind.attr())));
            continue;
        }
        let ImplItem::Fn(f) = item else { continue };
        let tokens = match &attr.meta {
            Meta::List(l) => l.tokens.clone(),
            _ => TokenStream2::new(),
        };
        if let Some(h) = errors.ok(Handler::parse(kind, tokens, &f.attrs, &mut f.sig, true)) {
            handlers.push(h);
        }
    }
    check_unique(&handlers, &mut errors);
    if let Err(e) = errors.finish() {
        let e = e.to_compile_error();
        return quote!(#imp #e);
    }

    let krate = krate();
    let ctx = Ctx { self_ty: Some(&self_ty) };
    let expansions: Vec<_> = handlers.iter().map(|h| expand::expand(h, &ctx)).collect();
    let items = expansions.iter().map(|x| &x.items);
    let registers = expansions.iter().map(|x| &x.register);
    let tool_defs = handlers
        .iter()
        .zip(&expansions)
        .filter(|(h, _)| h.kind == Kind::Tool)
        .filter_map(|(_, x)| x.definition.as_ref().map(|(def, _)| def));
    quote! {
        #imp
        const _: () = {
            #(#items)*
            impl #krate::server::ToolBox for #self_ty {
                fn tools() -> ::std::vec::Vec<#krate::schema::Tool> {
                    ::std::vec![#(#tool_defs()),*]
                }
                fn register(
                    self: ::std::sync::Arc<Self>,
                    builder: #krate::server::ServerBuilder,
                ) -> #krate::server::ServerBuilder {
                    #(let builder = #registers;)*
                    builder
                }
            }
        };
    }
}

/// Names a server keeps unique: tools and prompts by name, resources by URI, completions by
/// target and argument. Also checks that a completion of a prompt in the block names one of its
/// arguments.
fn check_unique(handlers: &[Handler], errors: &mut Errors) {
    let mut seen: Vec<(&'static str, String, &Handler)> = Vec::new();
    for h in handlers {
        let (space, key, hint) = match &h.opts {
            Opts::Tool(t) => ("tool", t.name.clone(), "give one of them another name: `#[tool(name = \"…\")]`"),
            Opts::Prompt(p) => ("prompt", p.name.clone(), "give one of them another name: `#[prompt(name = \"…\")]`"),
            Opts::Resource(r) => ("resource", r.uri.value(), "a URI (template) names one resource"),
            Opts::Completion(c) => {
                let target = match &c.target {
                    Target::Prompt(p) => format!("prompt `{}`", p.value()),
                    Target::Resource(r) => format!("resource `{}`", r.value()),
                };
                ("completion", format!("{}` of {target}", c.arg.value()), "one function completes an argument")
            }
        };
        if let Some((_, _, first)) = seen.iter().find(|(s, k, _)| *s == space && *k == key) {
            errors.push(Error::new(
                h.span,
                format!(
                    "duplicate {space} `{key}`: the method `{}` above already defines it, and registering both would keep \
                     only the last; {hint}",
                    first.ident
                ),
            ));
        }
        seen.push((space, key, h));
    }
    for h in handlers {
        let Opts::Completion(c) = &h.opts else { continue };
        let Target::Prompt(p) = &c.target else { continue };
        let prompt = handlers.iter().find(|o| matches!(&o.opts, Opts::Prompt(op) if op.name == p.value()));
        if let Some(prompt) = prompt {
            let names: Vec<String> = prompt.params.iter().filter(|p| !p.is_injected()).map(|p| p.wire_name()).collect();
            if !names.contains(&c.arg.value()) {
                errors.push(Error::new(
                    c.arg.span(),
                    format!(
                        "prompt `{}` has no argument `{}`; its arguments: {}",
                        p.value(),
                        c.arg.value(),
                        model::list(&names)
                    ),
                ));
            }
        }
    }
}
