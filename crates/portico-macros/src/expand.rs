//! Code generation: every handler becomes a definition function (`Tool`, `Resource`,
//! `ResourceTemplate` or `Prompt`) and one builder call (`builder.tool(definition, closure)`, …),
//! exactly what a user would write by hand. The closure decodes the arguments, calls the
//! function, and converts what it returns.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Type};

use crate::model::{Class, Handler, Opts, Param, Receiver, Target, last_segment};

/// The path the expansion names portico by.
pub fn krate() -> TokenStream {
    quote!(::portico)
}

/// Where the handler lives: a free function, or a method of `self_ty` inside `#[tools]`.
pub struct Ctx<'a> {
    pub self_ty: Option<&'a Type>,
}

impl Ctx<'_> {
    /// `tokens` with `Self` replaced by the implementing type (the generated items sit outside
    /// the `impl` block).
    fn fix_self(&self, tokens: TokenStream) -> TokenStream {
        match self.self_ty {
            None => tokens,
            Some(ty) => replace_self(tokens, ty),
        }
    }

    fn ty(&self, ty: &Type) -> TokenStream {
        self.fix_self(ty.to_token_stream())
    }
}

/// Spliced as plain tokens (not a group), so that `Self::new()` and `Self { … }` stay valid
/// expressions; `#[tools]` refuses generic impl blocks, so the type is a plain path.
fn replace_self(tokens: TokenStream, ty: &Type) -> TokenStream {
    let mut out = TokenStream::new();
    for tt in tokens {
        match tt {
            TokenTree::Ident(i) if i == "Self" => out.extend(ty.to_token_stream()),
            TokenTree::Group(g) => {
                let mut new = Group::new(g.delimiter(), replace_self(g.stream(), ty));
                new.set_span(g.span());
                out.extend([TokenTree::Group(new)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

/// What one handler expands to.
pub struct Expansion {
    /// Items for the surrounding `const _: () = { … };` block: the arguments struct, default
    /// functions, and the definition function.
    pub items: TokenStream,
    /// The definition function (if any) and the type it returns.
    pub definition: Option<(Ident, TokenStream)>,
    /// An expression of the builder after registration; reads `builder` (and `self`, an
    /// `Arc<Self>`, for methods).
    pub register: TokenStream,
}

fn unraw(ident: &Ident) -> String {
    ident.unraw().to_string()
}

fn opt_call(method: &str, value: Option<impl ToTokens>) -> TokenStream {
    let method = Ident::new(method, Span::call_site());
    value.map(|v| quote!(.#method(#v))).unwrap_or_default()
}

/// The closure given to the builder: `move |params| async move { body }`, with a clone of the
/// shared `Arc<Self>` per call for methods.
fn closure(h: &Handler, inputs: TokenStream, body: TokenStream) -> TokenStream {
    if h.receiver == Receiver::None {
        quote!(move |#inputs| async move { #body })
    } else {
        quote!({
            let __this = ::std::sync::Arc::clone(&self);
            move |#inputs| {
                let __this = ::std::sync::Arc::clone(&__this);
                async move { #body }
            }
        })
    }
}

/// `f(args)` or `<Type>::f(&*__this, args)`, awaited when async.
fn call(h: &Handler, ctx: &Ctx<'_>, args: &[TokenStream]) -> TokenStream {
    let krate = krate();
    // Extensions are taken from the context first, so a context parameter taken by value
    // can still be moved into the call.
    let extensions = h.params.iter().filter(|p| matches!(p.class, Class::Extension)).map(|p| {
        let (var, ty) = (extension_var(p), ctx.ty(&p.ty));
        quote_spanned!(p.ty.span()=>
            let #var = match <#ty>::from_context(&__cx) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => return #krate::__private::Missing::missing(e),
            };
        )
    });
    let prelude = quote!(#(#extensions)*);
    let ident = &h.ident;
    let call = match (ctx.self_ty, h.receiver) {
        (Some(ty), Receiver::Ref) => quote!(<#ty>::#ident(&*__this, #(#args),*)),
        (Some(ty), Receiver::Arc) => quote!(<#ty>::#ident(__this, #(#args),*)),
        (Some(ty), Receiver::None) => quote!(<#ty>::#ident(#(#args),*)),
        (None, _) => quote!(#ident(#(#args),*)),
    };
    let call = if h.is_async { quote!(#call.await) } else { call };
    quote!({ #prelude #call })
}

/// The local holding an `Extension<T>` parameter's value.
fn extension_var(p: &Param) -> Ident {
    format_ident!("__portico_ext_{}", unraw(&p.ident))
}

/// The context parameter of the closure: named when the function wants it.
fn context_input(h: &Handler) -> TokenStream {
    let krate = krate();
    if h.params.iter().any(|p| matches!(p.class, Class::Context { .. } | Class::Extension)) {
        quote!(__cx: #krate::server::RequestContext)
    } else {
        quote!(_: #krate::server::RequestContext)
    }
}

fn used_or_wild(used: bool, name: TokenStream) -> TokenStream {
    if used { name } else { quote!(_) }
}

/// The argument passed for an injected parameter, or `None` for a decoded one.
fn injected(p: &Param) -> Option<TokenStream> {
    Some(match p.class {
        Class::Context { by_ref: true } => quote!(&__cx),
        Class::Context { by_ref: false } => quote!(__cx),
        Class::Request { by_ref: true } => quote!(&__req),
        Class::Request { by_ref: false } => quote!(__req),
        Class::Params { by_ref: true } => quote!(&__params),
        Class::Params { by_ref: false } => quote!(__params),
        Class::Extension => extension_var(p).into_token_stream(),
        _ => return None,
    })
}

/// Whether attribute `a` names any of `keys` (a shallow look at its tokens).
fn mentions(a: &syn::Attribute, keys: &[&str]) -> bool {
    fn walk(tokens: TokenStream, keys: &[&str]) -> bool {
        tokens.into_iter().any(|tt| match tt {
            TokenTree::Ident(i) => keys.iter().any(|k| i == k),
            TokenTree::Group(g) => walk(g.stream(), keys),
            _ => false,
        })
    }
    match &a.meta {
        syn::Meta::List(l) => walk(l.tokens.clone(), keys),
        _ => false,
    }
}

fn is_string(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|(i, a)| i == "String" && a.is_empty())
}

/// A default value expression of the parameter's (owned) type.
fn default_value(p: &Param, expr: &Expr) -> TokenStream {
    if matches!(p.class, Class::Str) || is_string(&p.ty) {
        quote_spanned!(expr.span()=> ::std::string::String::from(#expr))
    } else {
        expr.to_token_stream()
    }
}

pub fn expand(h: &Handler, ctx: &Ctx<'_>) -> Expansion {
    match &h.opts {
        Opts::Tool(_) => tool(h, ctx),
        Opts::Resource(_) => resource(h, ctx),
        Opts::Prompt(_) => prompt(h, ctx),
        Opts::Completion(_) => completion(h, ctx),
    }
}

/// How a tool's return value becomes a result, and the type of its structured content.
enum Wrap {
    None,
    Json,
    ResultJson,
}

fn tool_output(h: &Handler, structured: bool) -> (Wrap, Option<Type>) {
    let Some(ty) = &h.output else { return (Wrap::None, None) };
    let json_inner = |t: &Type| match last_segment(t) {
        Some((i, args)) if i == "Json" && args.len() == 1 => Some(args[0].clone()),
        _ => None,
    };
    if let Some(inner) = json_inner(ty) {
        return (Wrap::None, Some(inner));
    }
    let result_ok = match last_segment(ty) {
        Some((i, args)) if i == "Result" && !args.is_empty() => Some(args[0].clone()),
        _ => None,
    };
    if let Some(ok) = &result_ok
        && let Some(inner) = json_inner(ok)
    {
        return (Wrap::None, Some(inner));
    }
    match (structured, result_ok) {
        (false, _) => (Wrap::None, None),
        (true, Some(ok)) => (Wrap::ResultJson, Some(ok)),
        (true, None) => (Wrap::Json, Some(ty.clone())),
    }
}

fn tool(h: &Handler, ctx: &Ctx<'_>) -> Expansion {
    let Opts::Tool(t) = &h.opts else { unreachable!() };
    let krate = krate();
    let base = unraw(&h.ident);
    let args_ty = format_ident!("__portico_{}_args", base);
    let def_fn = format_ident!("__portico_{}_tool", base);

    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut call_args = Vec::new();
    for p in &h.params {
        if let Some(arg) = injected(p) {
            call_args.push(arg);
            continue;
        }
        let ident = &p.ident;
        let field_ty = match p.class {
            Class::Str => quote!(::std::string::String),
            Class::OptStr => quote!(::core::option::Option<::std::string::String>),
            _ => ctx.ty(&p.ty),
        };
        let mut attrs = Vec::new();
        if let Some(d) = &p.description {
            attrs.push(quote!(#[schemars(description = #d)]));
        }
        if let Some(n) = &p.name {
            attrs.push(quote!(#[serde(rename = #n)]));
        }
        match &p.default {
            None => {}
            Some(None) => attrs.push(quote!(#[serde(default)])),
            Some(Some(expr)) => {
                let f = format_ident!("__portico_{}_default_{}", base, unraw(ident));
                let name = f.to_string();
                let value = ctx.fix_self(default_value(p, expr));
                defaults.push(quote!(fn #f() -> #field_ty { #value }));
                attrs.push(quote!(#[serde(default = #name)]));
            }
        }
        // Decoding goes through `argument` (whose bound explains itself) unless the user
        // decodes the field some other way.
        if !p.passthrough.iter().any(|a| mentions(a, &["with", "deserialize_with", "flatten"])) {
            let (func, optional) = match p.class {
                Class::OptStr | Class::OptValue(_) => ("optional_argument", true),
                _ => ("argument", false),
            };
            let path = LitStr::new(&format!("{krate}::__private::{func}").replace(' ', ""), p.ty.span());
            attrs.push(quote!(#[serde(deserialize_with = #path)]));
            if optional {
                // Absent is `None`, as without `deserialize_with`; `skip_serializing_if` keeps
                // schemars from writing `"default": null`.
                attrs.push(quote!(#[serde(default, skip_serializing_if = "Option::is_none")]));
            }
        }
        let passthrough = &p.passthrough;
        fields.push(quote!(#(#attrs)* #(#passthrough)* #ident: #field_ty));
        call_args.push(match p.class {
            Class::Str => quote!(&__args.#ident),
            Class::OptStr => quote!(::core::option::Option::as_deref(&__args.#ident)),
            _ => quote!(__args.#ident),
        });
    }

    let (wrap, output_ty) = tool_output(h, t.structured);
    let ret_span = h.output.as_ref().map_or(h.span, Spanned::span);
    let wrap = match wrap {
        Wrap::None => quote!(),
        Wrap::Json => quote_spanned!(ret_span=> let __out = #krate::server::Json(__out);),
        Wrap::ResultJson => {
            quote_spanned!(ret_span=> let __out = ::core::result::Result::map(__out, #krate::server::Json);)
        }
    };
    let convert = quote_spanned!(ret_span=> #krate::__private::tool_result(__out));
    let the_call = call(h, ctx, &call_args);
    let body = quote!(
        let __out = #the_call;
        #wrap
        #convert
    );
    let inputs = {
        let cx = context_input(h);
        let args = used_or_wild(h.params.iter().any(|p| !p.is_injected()), quote!(__args));
        quote!(#args: #args_ty, #cx)
    };
    let handler = closure(h, inputs, body);

    let name = &t.name;
    let description = opt_call("with_description", t.description.as_ref());
    let title = opt_call("with_title", t.title.as_ref());
    let annotations = if t.hints.is_empty() {
        quote!()
    } else {
        let hints = t.hints.iter().map(|(method, value)| {
            let method = Ident::new(method, Span::call_site());
            quote!(.#method(#value))
        });
        quote!(.with_annotations(#krate::schema::ToolAnnotations::new() #(#hints)*))
    };
    let output_schema = output_ty.map(|ty| {
        let ty = ctx.ty(&ty);
        quote!(.with_output_schema(::core::clone::Clone::clone(#krate::server::output_schema::<#ty>())))
    });
    // No arguments: `{"type": "object", "additionalProperties": false}`, as the spec advises.
    let closed = fields.is_empty().then(|| quote!(#[serde(deny_unknown_fields)]));
    let serde_path = format!("{krate}::__private::serde").replace(' ', "");
    let schemars_path = format!("{krate}::__private::schemars").replace(' ', "");
    let items = quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #closed
        #[allow(non_camel_case_types, dead_code)]
        struct #args_ty { #(#fields,)* }
        #(#[allow(non_snake_case)] #defaults)*
        #[allow(non_snake_case)]
        fn #def_fn() -> #krate::schema::Tool {
            #krate::schema::Tool::new(
                #name,
                ::core::clone::Clone::clone(#krate::server::input_schema::<#args_ty>()),
            )
            #title
            #description
            #annotations
            #output_schema
        }
    };
    Expansion {
        items,
        definition: Some((def_fn.clone(), quote!(#krate::schema::Tool))),
        register: quote!(builder.tool(#def_fn(), #handler)),
    }
}

/// Extraction of a prompt argument or template variable into `__p{i}`, returning early on error.
fn extract(p: &Param, ctx: &Ctx<'_>, source: TokenStream, required: &str, optional: &str, i: usize) -> TokenStream {
    let krate = krate();
    let var = format_ident!("__p{}", i);
    let name = p.wire_name();
    let required = Ident::new(required, Span::call_site());
    let optional = Ident::new(optional, Span::call_site());
    let string = quote!(::std::string::String);
    let (func, ty) = match (&p.class, &p.default) {
        (Class::Str, None) => (required, string),
        (Class::Str | Class::OptStr, _) => (optional, string),
        (Class::OptValue(inner), _) => (optional, ctx.ty(inner)),
        (_, None) => (required, ctx.ty(&p.ty)),
        (_, Some(_)) => (optional, ctx.ty(&p.ty)),
    };
    let fallback = match &p.default {
        None => quote!(),
        Some(None) => quote!(.unwrap_or_default()),
        Some(Some(expr)) => {
            let value = ctx.fix_self(default_value(p, expr));
            quote!(.unwrap_or_else(|| #value))
        }
    };
    let get = quote_spanned!(p.ty.span()=> #krate::__private::#func::<#ty>(#source, #name));
    quote! {
        let #var = match #get {
            ::core::result::Result::Ok(v) => v #fallback,
            ::core::result::Result::Err(e) => return ::core::result::Result::Err(e),
        };
    }
}

/// The argument passed for a parsed parameter held in `__p{i}`.
fn parsed_arg(p: &Param, i: usize) -> TokenStream {
    let var = format_ident!("__p{}", i);
    match p.class {
        Class::Str => quote!(&#var),
        Class::OptStr => quote!(::core::option::Option::as_deref(&#var)),
        _ => quote!(#var),
    }
}

fn resource(h: &Handler, ctx: &Ctx<'_>) -> Expansion {
    let Opts::Resource(r) = &h.opts else { unreachable!() };
    let krate = krate();
    let def_fn = format_ident!("__portico_{}_resource", unraw(&h.ident));
    let mut extracts = Vec::new();
    let mut call_args = Vec::new();
    for (i, p) in h.params.iter().enumerate() {
        match injected(p) {
            Some(arg) => call_args.push(arg),
            None => {
                extracts.push(extract(p, ctx, quote!(&__req), "template_var", "template_var_opt", i));
                call_args.push(parsed_arg(p, i));
            }
        }
    }
    let the_call = call(h, ctx, &call_args);
    let mime = match &r.mime_type {
        Some(m) => quote!(::core::option::Option::Some(#m)),
        None => quote!(::core::option::Option::None),
    };
    let ret_span = h.output.as_ref().map_or(h.span, Spanned::span);
    let convert = quote_spanned!(ret_span=> #krate::__private::resource_result(__out, &__uri, #mime));
    let body = quote! {
        #(#extracts)*
        let __uri = ::std::string::ToString::to_string(__req.uri());
        let __out = #the_call;
        #convert
    };
    let inputs = {
        let cx = context_input(h);
        quote!(__req: #krate::server::ResourceRequest, #cx)
    };
    let handler = closure(h, inputs, body);
    let (uri, name) = (&r.uri, &r.name);
    let title = opt_call("with_title", r.title.as_ref());
    let description = opt_call("with_description", r.description.as_ref());
    let mime_type = opt_call("with_mime_type", r.mime_type.as_ref());
    let (def_ty, method) = if r.variables.is_empty() {
        (quote!(#krate::schema::Resource), quote!(resource))
    } else {
        (quote!(#krate::schema::ResourceTemplate), quote!(resource_template))
    };
    let items = quote! {
        #[allow(non_snake_case)]
        fn #def_fn() -> #def_ty {
            #def_ty::new(#uri, #name) #title #description #mime_type
        }
    };
    Expansion {
        items,
        definition: Some((def_fn.clone(), def_ty)),
        register: quote!(builder.#method(#def_fn(), #handler)),
    }
}

fn prompt(h: &Handler, ctx: &Ctx<'_>) -> Expansion {
    let Opts::Prompt(pr) = &h.opts else { unreachable!() };
    let krate = krate();
    let def_fn = format_ident!("__portico_{}_prompt", unraw(&h.ident));
    let mut extracts = Vec::new();
    let mut call_args = Vec::new();
    let mut arguments = Vec::new();
    for (i, p) in h.params.iter().enumerate() {
        match injected(p) {
            Some(arg) => call_args.push(arg),
            None => {
                extracts.push(extract(p, ctx, quote!(&__args), "prompt_arg", "prompt_arg_opt", i));
                call_args.push(parsed_arg(p, i));
                let name = p.wire_name();
                let description = opt_call("with_description", p.description.as_ref());
                let required = !p.is_optional();
                arguments.push(quote!(
                    .with_argument(#krate::schema::PromptArgument::new(#name) #description .with_required(#required))
                ));
            }
        }
    }
    let the_call = call(h, ctx, &call_args);
    let ret_span = h.output.as_ref().map_or(h.span, Spanned::span);
    let convert = quote_spanned!(ret_span=> #krate::__private::prompt_result(__out));
    let body = quote! {
        #(#extracts)*
        let __out = #the_call;
        #convert
    };
    let inputs = {
        let cx = context_input(h);
        let args = used_or_wild(h.params.iter().any(|p| !p.is_injected()), quote!(__args));
        quote!(#args: #krate::__private::PromptArguments, #cx)
    };
    let handler = closure(h, inputs, body);
    let name = &pr.name;
    let title = opt_call("with_title", pr.title.as_ref());
    let description = opt_call("with_description", pr.description.as_ref());
    let items = quote! {
        #[allow(non_snake_case)]
        fn #def_fn() -> #krate::schema::Prompt {
            #krate::schema::Prompt::new(#name) #title #description #(#arguments)*
        }
    };
    Expansion {
        items,
        definition: Some((def_fn.clone(), quote!(#krate::schema::Prompt))),
        register: quote!(builder.prompt(#def_fn(), #handler)),
    }
}

fn completion(h: &Handler, ctx: &Ctx<'_>) -> Expansion {
    let Opts::Completion(c) = &h.opts else { unreachable!() };
    let krate = krate();
    let mut call_args = Vec::new();
    for p in &h.params {
        call_args.push(match injected(p) {
            Some(arg) => arg,
            None if matches!(p.class, Class::Str) => quote!(&__value),
            None => quote!(__value),
        });
    }
    let the_call = call(h, ctx, &call_args);
    let ret_span = h.output.as_ref().map_or(h.span, Spanned::span);
    let convert = quote_spanned!(ret_span=> #krate::__private::completion_result(__out));
    let value = if h.params.iter().any(|p| !p.is_injected()) {
        quote!(let __value = ::core::clone::Clone::clone(&__params.argument.value);)
    } else {
        quote!()
    };
    let body = quote! {
        #value
        let __out = #the_call;
        #convert
    };
    let inputs = {
        let cx = context_input(h);
        let params = used_or_wild(
            !h.params.iter().all(|p| matches!(p.class, Class::Context { .. } | Class::Extension)),
            quote!(__params),
        );
        quote!(#params: #krate::schema::CompleteRequestParams, #cx)
    };
    let handler = closure(h, inputs, body);
    let reference = match &c.target {
        Target::Prompt(p) => quote!(#krate::schema::CompletionReference::prompt(#p)),
        Target::Resource(r) => quote!(#krate::schema::CompletionReference::resource(#r)),
    };
    let arg = &c.arg;
    Expansion {
        items: quote!(),
        definition: None,
        register: quote!(builder.complete_argument(#reference, #arg, #handler)),
    }
}
