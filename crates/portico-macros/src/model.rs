//! One annotated function, read from its signature and attributes: what kind of handler it is,
//! its options, and what each parameter is (injected context or a typed argument).

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, ExprLit, FnArg, GenericArgument, Ident, Lit, LitStr, Meta, Pat, PathArguments, Result,
    ReturnType, Signature, Type,
};

use crate::options::Options;
use crate::uri;

/// What a function becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Resource,
    Prompt,
    Completion,
}

impl Kind {
    pub fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::Prompt => "prompt",
            Kind::Completion => "completion",
        }
    }

    pub fn from_attr(attr: &Attribute) -> Option<Kind> {
        let last = attr.path().segments.last()?;
        [Kind::Tool, Kind::Resource, Kind::Prompt, Kind::Completion].into_iter().find(|k| last.ident == k.attr())
    }
}

/// How a method gets at its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    None,
    /// `&self`
    Ref,
    /// `self: Arc<Self>`
    Arc,
}

/// What a parameter is.
#[derive(Clone)]
pub enum Class {
    /// `RequestContext` or `&RequestContext`.
    Context { by_ref: bool },
    /// `ResourceRequest` or `&ResourceRequest` (resources).
    Request { by_ref: bool },
    /// `CompleteRequestParams` or `&CompleteRequestParams` (completions).
    Params { by_ref: bool },
    /// `Extension<T>`: a request extension by type (needs the context).
    Extension,
    /// `&str`: decoded as a `String`, lent.
    Str,
    /// `Option<&str>`.
    OptStr,
    /// `Option<T>`, with `T`.
    OptValue(Box<Type>),
    /// Any other owned type.
    Value,
}

pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub class: Class,
    pub description: Option<String>,
    /// `#[arg(default)]` (`Some(None)`) or `#[arg(default = expr)]`.
    pub default: Option<Option<Expr>>,
    /// `#[arg(name = "…")]`: the name on the wire.
    pub name: Option<LitStr>,
    /// `#[serde(…)]` and `#[schemars(…)]`, forwarded to the arguments struct (tools).
    pub passthrough: Vec<Attribute>,
}

impl Param {
    pub fn wire_name(&self) -> String {
        match &self.name {
            Some(n) => n.value(),
            None => self.ident.unraw().to_string(),
        }
    }

    pub fn wire_span(&self) -> Span {
        self.name.as_ref().map_or(self.ident.span(), LitStr::span)
    }

    pub fn is_injected(&self) -> bool {
        matches!(self.class, Class::Context { .. } | Class::Request { .. } | Class::Params { .. } | Class::Extension)
    }

    pub fn is_optional(&self) -> bool {
        matches!(self.class, Class::OptStr | Class::OptValue(_)) || self.default.is_some()
    }
}

pub struct ToolOpts {
    pub name: String,
    pub title: Option<LitStr>,
    pub description: Option<String>,
    pub structured: bool,
    /// Annotation hints: (builder method, value).
    pub hints: Vec<(&'static str, bool)>,
}

pub struct ResourceOpts {
    pub uri: LitStr,
    pub variables: Vec<String>,
    pub name: String,
    pub title: Option<LitStr>,
    pub description: Option<String>,
    pub mime_type: Option<LitStr>,
}

pub struct PromptOpts {
    pub name: String,
    pub title: Option<LitStr>,
    pub description: Option<String>,
}

pub enum Target {
    Prompt(LitStr),
    Resource(LitStr),
}

pub struct CompletionOpts {
    pub target: Target,
    pub arg: LitStr,
}

pub enum Opts {
    Tool(ToolOpts),
    Resource(ResourceOpts),
    Prompt(PromptOpts),
    Completion(CompletionOpts),
}

/// One annotated function.
pub struct Handler {
    pub kind: Kind,
    pub opts: Opts,
    pub ident: Ident,
    pub receiver: Receiver,
    pub is_async: bool,
    pub params: Vec<Param>,
    pub output: Option<Type>,
    /// Where a problem with the function as a whole is reported: its name.
    pub span: Span,
}

/// Collects errors so that one expansion reports all of them.
#[derive(Default)]
pub struct Errors(Option<Error>);

impl Errors {
    pub fn push(&mut self, e: Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub fn ok<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    pub fn finish(self) -> Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// The text of `///` comments: each line without its first space, trimmed at the ends.
/// `None` when there are none (or only blank ones).
pub fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| s.lines().map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned()).collect::<Vec<_>>())
        .collect();
    let text = lines.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn strip_raw(ident: &Ident) -> String {
    ident.unraw().to_string()
}

/// A tool name as the spec recommends: 1 to 128 of `A-Z a-z 0-9 _ - .`.
fn check_tool_name(name: &LitStr) -> Result<()> {
    let v = name.value();
    let ok = (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::new(name.span(), "a tool name is 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`"))
    }
}

pub fn template_variables(uri: &LitStr) -> Result<Vec<String>> {
    uri::variables(&uri.value()).map_err(|e| {
        Error::new(
            uri.span(),
            format!(
                "invalid URI template at byte {}: {} (RFC 6570: variables are `{{name}}`, `{{+path}}`, `{{?a,b}}`, …)",
                e.position, e.what
            ),
        )
    })
}

impl Opts {
    fn parse(kind: Kind, tokens: TokenStream, ident: &Ident, doc: Option<String>) -> Result<Opts> {
        let fn_name = strip_raw(ident);
        match kind {
            Kind::Tool => {
                const KEYS: &[&str] = &[
                    "name",
                    "title",
                    "description",
                    "no_description",
                    "structured",
                    "read_only",
                    "destructive",
                    "idempotent",
                    "open_world",
                ];
                let o = Options::new("tool", tokens, KEYS)?;
                let name = o.string("name")?;
                if let Some(n) = &name {
                    check_tool_name(n)?;
                }
                let description = o.string("description")?.map(|d| d.value()).or(doc);
                let no_description = o.flag("no_description")?;
                if description.is_none() && !no_description.is_some_and(|(v, _)| v) {
                    return Err(Error::new(
                        ident.span(),
                        format!(
                            "tool `{fn_name}` has no description: add a `///` doc comment saying what it does \
                             (the model reads it to choose a tool), or `#[tool(description = \"…\")]`; \
                             `#[tool(no_description)]` leaves it out on purpose"
                        ),
                    ));
                }
                if let (Some(_), Some((true, span))) = (&description, no_description) {
                    return Err(Error::new(span, "`no_description` on a tool that has a description"));
                }
                let mut hints = Vec::new();
                for (key, method) in [
                    ("read_only", "with_read_only"),
                    ("destructive", "with_destructive"),
                    ("idempotent", "with_idempotent"),
                    ("open_world", "with_open_world"),
                ] {
                    if let Some((v, _)) = o.flag(key)? {
                        hints.push((method, v));
                    }
                }
                Ok(Opts::Tool(ToolOpts {
                    name: name.map_or(fn_name, |n| n.value()),
                    title: o.string("title")?,
                    description,
                    structured: o.flag("structured")?.is_some_and(|(v, _)| v),
                    hints,
                }))
            }
            Kind::Resource => {
                const KEYS: &[&str] = &["", "uri", "name", "title", "description", "mime_type"];
                let o = Options::new("resource", tokens, KEYS)?;
                let positional = o.positional();
                if let Some(extra) = positional.get(1) {
                    return Err(Error::new(extra.span(), "one URI (template) per resource"));
                }
                let uri = match (positional.first(), o.string("uri")?) {
                    (Some(p), None) => (*p).clone(),
                    (None, Some(u)) => u,
                    (Some(_), Some(u)) => return Err(Error::new(u.span(), "the URI is given twice")),
                    (None, None) => {
                        return Err(Error::new(
                            ident.span(),
                            "a resource needs its URI or URI template: `#[resource(\"users://{id}/profile\")]`",
                        ));
                    }
                };
                let variables = template_variables(&uri)?;
                Ok(Opts::Resource(ResourceOpts {
                    uri,
                    variables,
                    name: o.string("name")?.map_or(fn_name, |n| n.value()),
                    title: o.string("title")?,
                    description: o.string("description")?.map(|d| d.value()).or(doc),
                    mime_type: o.string("mime_type")?,
                }))
            }
            Kind::Prompt => {
                let o = Options::new("prompt", tokens, &["name", "title", "description"])?;
                Ok(Opts::Prompt(PromptOpts {
                    name: o.string("name")?.map_or(fn_name, |n| n.value()),
                    title: o.string("title")?,
                    description: o.string("description")?.map(|d| d.value()).or(doc),
                }))
            }
            Kind::Completion => {
                let o = Options::new("completion", tokens, &["prompt", "resource", "arg"])?;
                let target = match (o.string("prompt")?, o.string("resource")?) {
                    (Some(p), None) => Target::Prompt(p),
                    (None, Some(r)) => Target::Resource(r),
                    (Some(_), Some(r)) => {
                        return Err(Error::new(
                            r.span(),
                            "a completion is for a prompt or a resource template, not both",
                        ));
                    }
                    (None, None) => {
                        return Err(Error::new(
                            ident.span(),
                            "say what this completes: `#[completion(prompt = \"name\", arg = \"argument\")]` or \
                             `#[completion(resource = \"uri-template\", arg = \"variable\")]`",
                        ));
                    }
                };
                let Some(arg) = o.string("arg")? else {
                    return Err(Error::new(
                        ident.span(),
                        "say which argument this completes: `arg = \"name\"` (a prompt argument or template variable)",
                    ));
                };
                if let Target::Resource(uri) = &target {
                    let vars = template_variables(uri)?;
                    if !vars.contains(&arg.value()) {
                        return Err(Error::new(
                            arg.span(),
                            format!(
                                "`{}` is not a variable of `{}`; its variables: {}",
                                arg.value(),
                                uri.value(),
                                list(&vars)
                            ),
                        ));
                    }
                }
                Ok(Opts::Completion(CompletionOpts { target, arg }))
            }
        }
    }
}

pub fn list(names: &[String]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

/// The last segment of a path type, with its generic type arguments.
pub fn last_segment(ty: &Type) -> Option<(&Ident, Vec<&Type>)> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((&seg.ident, args))
}

fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|(i, _)| i == name)
}

fn unparen(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => unparen(&p.elem),
        Type::Group(g) => unparen(&g.elem),
        t => t,
    }
}

/// A reference (or lifetime) anywhere inside `ty`: the arguments struct owns its fields.
fn borrowed_part(ty: &Type) -> Option<Span> {
    match ty {
        Type::Reference(r) => Some(r.span()),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                GenericArgument::Type(t) => borrowed_part(t),
                GenericArgument::Lifetime(l) => Some(l.span()),
                _ => None,
            }),
            _ => None,
        }),
        Type::Tuple(t) => t.elems.iter().find_map(borrowed_part),
        Type::Array(a) => borrowed_part(&a.elem),
        Type::Slice(s) => borrowed_part(&s.elem),
        Type::Paren(p) => borrowed_part(&p.elem),
        Type::Group(g) => borrowed_part(&g.elem),
        _ => None,
    }
}

/// A type as the user would write it (token spacing removed).
fn shown(ty: &Type) -> String {
    let s = quote::quote!(#ty).to_string();
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let drop = c == ' '
            && (out.ends_with(['&', '<', '(', '[', ':', '\''])
                || matches!(next, Some('<' | '>' | ',' | ')' | ']' | ':')));
        if !drop {
            out.push(c);
        }
    }
    out
}

fn unsupported_reference(span: Span, shown: &str) -> Error {
    Error::new(
        span,
        format!(
            "unsupported parameter type `{shown}`: arguments are decoded into owned values, so take the type \
             itself (e.g. `String`, `Vec<T>`), not a reference; only `&str` and `&RequestContext` may be borrowed"
        ),
    )
}

fn classify(ty: &Type) -> Result<Class> {
    let ty = unparen(ty);
    match ty {
        Type::Reference(r) => {
            let elem = unparen(&r.elem);
            let shown = shown(ty);
            if r.mutability.is_some() && is_named(elem, "RequestContext") {
                return Err(Error::new(
                    ty.span(),
                    "take `&RequestContext` (or `RequestContext`): the context is shared, its methods take `&self`",
                ));
            }
            if r.mutability.is_some() {
                return Err(unsupported_reference(ty.span(), &shown));
            }
            if is_named(elem, "RequestContext") {
                Ok(Class::Context { by_ref: true })
            } else if is_named(elem, "ResourceRequest") {
                Ok(Class::Request { by_ref: true })
            } else if is_named(elem, "CompleteRequestParams") {
                Ok(Class::Params { by_ref: true })
            } else if matches!(elem, Type::Path(p) if p.path.is_ident("str")) {
                Ok(Class::Str)
            } else {
                Err(unsupported_reference(ty.span(), &shown))
            }
        }
        Type::ImplTrait(_) | Type::Infer(_) | Type::TraitObject(_) | Type::BareFn(_) | Type::Never(_) => {
            Err(Error::new(ty.span(), "unsupported parameter type: name a concrete type that implements `Deserialize`"))
        }
        _ if is_named(ty, "RequestContext") => Ok(Class::Context { by_ref: false }),
        _ if is_named(ty, "ResourceRequest") => Ok(Class::Request { by_ref: false }),
        _ if is_named(ty, "CompleteRequestParams") => Ok(Class::Params { by_ref: false }),
        _ if last_segment(ty).is_some_and(|(i, a)| i == "Extension" && a.len() == 1) => Ok(Class::Extension),
        _ => {
            if let Some((ident, args)) = last_segment(ty)
                && ident == "Option"
                && let [inner] = args[..]
            {
                let inner = unparen(inner);
                if let Type::Reference(r) = inner
                    && r.mutability.is_none()
                    && matches!(unparen(&r.elem), Type::Path(p) if p.path.is_ident("str"))
                {
                    return Ok(Class::OptStr);
                }
                if let Some(span) = borrowed_part(inner) {
                    let shown = shown(ty);
                    return Err(unsupported_reference(span, &shown));
                }
                return Ok(Class::OptValue(Box::new(inner.clone())));
            }
            if let Some(span) = borrowed_part(ty) {
                let shown = shown(ty);
                return Err(unsupported_reference(span, &shown));
            }
            Ok(Class::Value)
        }
    }
}

fn is_string(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|(i, args)| i == "String" && args.is_empty())
}

impl Param {
    /// Reads one parameter, taking its doc comments, `#[arg]`, `#[serde]` and `#[schemars]`
    /// attributes off it (the compiler refuses them on parameters).
    fn parse(kind: Kind, arg: &mut syn::PatType) -> Result<Param> {
        let mut errors = Errors::default();
        let attrs = std::mem::take(&mut arg.attrs);
        let mut docs = Vec::new();
        let mut arg_attr = None;
        let mut passthrough = Vec::new();
        for a in attrs {
            if a.path().is_ident("doc") {
                docs.push(a);
            } else if a.path().is_ident("arg") {
                if arg_attr.is_some() {
                    errors.push(Error::new(a.span(), "one `#[arg(…)]` per parameter"));
                }
                arg_attr = Some(a);
            } else if a.path().is_ident("serde") || a.path().is_ident("schemars") {
                if kind != Kind::Tool {
                    errors.push(Error::new(
                        a.span(),
                        "`#[serde]` and `#[schemars]` apply to tool parameters only (prompt arguments and \
                         template variables are parsed with `FromStr`); use `#[arg(name = \"…\")]` to rename",
                    ));
                }
                passthrough.push(a);
            } else {
                arg.attrs.push(a);
            }
        }
        let class = errors.ok(classify(&arg.ty)).unwrap_or(Class::Value);
        let injected =
            matches!(class, Class::Context { .. } | Class::Request { .. } | Class::Params { .. } | Class::Extension);
        let ident = match &*arg.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            Pat::Wild(w) if injected => Ident::new("_", w.span()),
            Pat::Wild(w) => {
                return Err(Error::new(
                    w.span(),
                    "name this parameter: its name is the name of the argument (prefix it with `r#` if it is a keyword)",
                ));
            }
            other => {
                return Err(Error::new(
                    other.span(),
                    "destructuring is not supported here: take the parameter by name and destructure in the body",
                ));
            }
        };
        let mut description = doc_text(&docs);
        let mut default = None;
        let mut name = None;
        if let Some(a) = &arg_attr {
            let tokens = match &a.meta {
                Meta::List(l) => l.tokens.clone(),
                _ => TokenStream::new(),
            };
            if let Some(o) = errors.ok(Options::new("arg", tokens, &["default", "name", "description"])) {
                if let Some(d) = errors.ok(o.string("description")) {
                    description = d.map(|d| d.value()).or(description);
                }
                name = errors.ok(o.string("name")).flatten();
                if let Some((key, value)) = o.expr("default") {
                    if kind == Kind::Completion {
                        errors.push(Error::new(key.span(), "`default` does not apply to a completion's value"));
                    }
                    if matches!(class, Class::OptStr | Class::OptValue(_)) {
                        errors.push(Error::new(
                            key.span(),
                            "an `Option` parameter is already optional (absent = `None`); drop `default`, or \
                             take the inner type to give it a default",
                        ));
                    }
                    default = Some(value);
                }
            }
        }
        let param = Param { ident, ty: (*arg.ty).clone(), class, description, default, name, passthrough };
        if param.is_injected()
            && let Some(a) = &arg_attr
        {
            errors.push(Error::new(a.span(), "`#[arg]` does not apply to an injected parameter"));
        }
        errors.finish()?;
        Ok(param)
    }
}

impl Handler {
    /// Reads `sig` (taking the attributes off its parameters) with the options `attr_tokens`
    /// and the function's attributes `attrs`. `in_impl`: inside `#[tools]`.
    pub fn parse(
        kind: Kind,
        attr_tokens: TokenStream,
        attrs: &[Attribute],
        sig: &mut Signature,
        in_impl: bool,
    ) -> Result<Handler> {
        let mut errors = Errors::default();
        let what = kind.attr();
        if let Some(c) = &sig.constness {
            errors.push(Error::new(c.span(), format!("a `#[{what}]` function cannot be `const`")));
        }
        if let Some(u) = &sig.unsafety {
            errors.push(Error::new(u.span(), format!("a `#[{what}]` function cannot be `unsafe`")));
        }
        if let Some(a) = &sig.abi {
            errors.push(Error::new(a.span(), format!("a `#[{what}]` function cannot be `extern`")));
        }
        if let Some(v) = &sig.variadic {
            errors.push(Error::new(v.span(), format!("a `#[{what}]` function cannot be variadic")));
        }
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            errors.push(Error::new(
                sig.generics.span(),
                format!(
                    "a `#[{what}]` function cannot be generic: its parameters' types decide its schema; \
                     name concrete types"
                ),
            ));
        }
        let opts = errors.ok(Opts::parse(kind, attr_tokens, &sig.ident, doc_text(attrs)));

        let mut receiver = Receiver::None;
        let mut params = Vec::new();
        for input in sig.inputs.iter_mut() {
            match input {
                FnArg::Receiver(r) => {
                    if !in_impl {
                        errors.push(Error::new(
                            r.span(),
                            format!(
                                "`#[{what}]` on a method needs `#[portico::tools]` on its `impl` block \
                                 (which registers the methods together)"
                            ),
                        ));
                    } else if r.reference.is_some() && r.mutability.is_none() {
                        receiver = Receiver::Ref;
                    } else if r.reference.is_none() && r.colon_token.is_some() && is_named(&r.ty, "Arc") {
                        receiver = Receiver::Arc;
                    } else {
                        errors.push(Error::new(
                            r.span(),
                            "take `&self` (or `self: Arc<Self>`): every handler shares one `Arc<Self>`; for \
                             state that changes, use a `Mutex` or atomics inside",
                        ));
                    }
                }
                FnArg::Typed(arg) => {
                    if let Some(p) = errors.ok(Param::parse(kind, arg)) {
                        params.push(p);
                    }
                }
            }
        }

        let mut seen_context = false;
        for p in &params {
            let misplaced = match p.class {
                Class::Context { .. } => {
                    if seen_context {
                        errors.push(Error::new(p.ty.span(), "one `RequestContext` parameter is enough"));
                    }
                    seen_context = true;
                    None
                }
                Class::Request { .. } if kind != Kind::Resource => Some("`ResourceRequest` is given to `#[resource]`"),
                Class::Params { .. } if kind != Kind::Completion => {
                    Some("`CompleteRequestParams` is given to `#[completion]`")
                }
                _ => None,
            };
            if let Some(m) = misplaced {
                errors.push(Error::new(p.ty.span(), format!("{m} functions only")));
            }
        }
        if kind == Kind::Completion {
            let values: Vec<&Param> = params.iter().filter(|p| !p.is_injected()).collect();
            for p in &values {
                if !(matches!(p.class, Class::Str) || (matches!(p.class, Class::Value) && is_string(&p.ty))) {
                    errors.push(Error::new(
                        p.ty.span(),
                        "a completion function takes the partial value as `String` or `&str` (and optionally \
                         `&CompleteRequestParams` and `&RequestContext`)",
                    ));
                }
            }
            if let Some(extra) = values.get(1) {
                errors.push(Error::new(extra.ident.span(), "a completion function takes one value: the partial input"));
            }
        }
        if let Some(Opts::Resource(r)) = &opts {
            for p in params.iter().filter(|p| !p.is_injected()) {
                let name = p.wire_name();
                if r.variables.is_empty() {
                    errors.push(Error::new(
                        p.ident.span(),
                        format!(
                            "`{}` is a static resource (no template variables), so it takes no arguments; only \
                             `&RequestContext` and `&ResourceRequest`",
                            r.uri.value()
                        ),
                    ));
                } else if !r.variables.contains(&name) {
                    errors.push(Error::new(
                        p.wire_span(),
                        format!(
                            "`{name}` is not a variable of the template `{}`; its variables: {} (rename the \
                             parameter, or `#[arg(name = \"…\")]`)",
                            r.uri.value(),
                            list(&r.variables)
                        ),
                    ));
                }
            }
        }
        let mut names: Vec<String> = Vec::new();
        for p in params.iter().filter(|p| !p.is_injected()) {
            let name = p.wire_name();
            if names.contains(&name) {
                errors.push(Error::new(p.wire_span(), format!("two parameters named `{name}`")));
            }
            names.push(name);
        }

        let output = match &sig.output {
            ReturnType::Default => None,
            ReturnType::Type(_, ty) => Some((**ty).clone()),
        };
        if let (Some(Opts::Tool(t)), None) = (&opts, &output)
            && t.structured
        {
            errors.push(Error::new(sig.ident.span(), "a `structured` tool returns the value to send: add `-> T`"));
        }
        errors.finish()?;
        let Some(opts) = opts else { return Err(Error::new(sig.ident.span(), "invalid options")) };
        Ok(Handler {
            kind,
            opts,
            ident: sig.ident.clone(),
            receiver,
            is_async: sig.asyncness.is_some(),
            params,
            output,
            span: sig.ident.span(),
        })
    }
}
