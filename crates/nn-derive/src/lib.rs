//! `#[derive(Module)]` for anygrad-nn: writes `Module::visit`, `set_training`, `is_training`
//! and `visit_children` from a struct's fields, and a `Module::forward` that calls the
//! struct's inherent `fn forward(&self, x: &Tensor) -> Result<Tensor>`. Re-exported as
//! `anygrad_nn::Module` (the derive shares the trait's name, like serde's `Serialize`); the
//! field rules and attributes are documented on `anygrad_nn::ModuleField`.
//!
//! The generated code only names items of `anygrad_nn::module_field::derive_support`, so the
//! derive needs nothing but that crate's path (`#[module(crate = "anygrad::nn")]` when the
//! user depends on the `anygrad` facade only; without it, such a crate gets an error that
//! says so: `missing_crate.rs`).

mod missing_crate;

use missing_crate::{missing_crate_message, CompiledCrate};
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, ToTokens};
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr, Path};

/// Derive `anygrad_nn::Module` from a struct's fields; the struct writes an inherent
/// `forward`. Attributes: `#[module(skip)]`, `#[module(buffer)]`, `#[module(name = "x")]` on
/// fields; `#[module(crate = "path")]` on the struct.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// How one field takes part.
enum Role {
    /// A submodule, parameter or plain value (through `ModuleField`).
    Field,
    /// A `Parameter` reported as a buffer.
    Buffer,
    /// Left out.
    Skip,
}

struct FieldPlan {
    access: TokenStream2,
    name: String,
    role: Role,
    ty: syn::Type,
}

/// The path of anygrad-nn: the struct's `#[module(crate = "...")]`, else `::anygrad_nn` (an
/// error saying which attribute to write where the crate being compiled cannot name it).
fn crate_path(input: &DeriveInput) -> syn::Result<Path> {
    let mut path: Option<Path> = None;
    for attribute in input.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attribute.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let value: LitStr = meta.value()?.parse()?;
                path = Some(value.parse()?);
                Ok(())
            } else {
                Err(meta.error("expected `crate = \"path\"` on the struct"))
            }
        })?;
    }
    if let Some(path) = path {
        return Ok(path);
    }
    let compiled = CompiledCrate::from_environment();
    if let Some(message) = missing_crate_message(&compiled, &input.ident.to_string()) {
        return Err(syn::Error::new(Span::call_site(), message));
    }
    Ok(syn::parse_quote!(::anygrad_nn))
}

fn plan_fields(fields: &Fields) -> syn::Result<Vec<FieldPlan>> {
    let mut plans = Vec::new();
    for (index, field) in fields.iter().enumerate() {
        let (access, default_name) = match &field.ident {
            Some(ident) => {
                let name = ident.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
                (ident.to_token_stream(), name)
            }
            None => {
                let member = syn::Index::from(index);
                (member.to_token_stream(), index.to_string())
            }
        };
        let mut role = Role::Field;
        let mut name = default_name;
        for attribute in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
            attribute.parse_nested_meta(|meta| {
                if meta.path.is_ident("skip") {
                    role = Role::Skip;
                    Ok(())
                } else if meta.path.is_ident("buffer") {
                    role = Role::Buffer;
                    Ok(())
                } else if meta.path.is_ident("name") {
                    let value: LitStr = meta.value()?.parse()?;
                    if value.value().is_empty() || value.value().contains('.') {
                        return Err(syn::Error::new(
                            value.span(),
                            "a module field name must be non-empty and without '.'",
                        ));
                    }
                    name = value.value();
                    Ok(())
                } else {
                    Err(meta.error("expected `skip`, `buffer` or `name = \"...\"`"))
                }
            })?;
        }
        plans.push(FieldPlan {
            access,
            name,
            role,
            ty: field.ty.clone(),
        });
    }
    Ok(plans)
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let fields = match &input.data {
        Data::Struct(data) => &data.fields,
        Data::Enum(_) | Data::Union(_) => {
            return Err(syn::Error::new(
                Span::call_site(),
                "#[derive(Module)] supports structs only; implement `Module` by hand for enums",
            ))
        }
    };
    let krate = crate_path(input)?;
    let support = quote!(#krate::module_field::derive_support);
    let plans = plan_fields(fields)?;
    let name = &input.ident;

    let mut generics = input.generics.clone();
    if !generics.params.is_empty() {
        let where_clause = generics.make_where_clause();
        for plan in &plans {
            let ty = &plan.ty;
            match plan.role {
                Role::Field => where_clause
                    .predicates
                    .push(syn::parse_quote!(#ty: #support::ModuleField)),
                Role::Buffer => where_clause
                    .predicates
                    .push(syn::parse_quote!(#ty: #support::BufferField)),
                Role::Skip => {}
            }
        }
        where_clause
            .predicates
            .push(syn::parse_quote!(Self: ::core::marker::Send + ::core::marker::Sync + 'static));
    }
    let (impl_generics, type_generics, where_clause) = generics.split_for_impl();

    let mut visits = Vec::new();
    let mut set_training = Vec::new();
    let mut is_training = Vec::new();
    let mut children = Vec::new();
    for plan in &plans {
        let access = &plan.access;
        let field_name = &plan.name;
        match plan.role {
            Role::Field => {
                visits.push(quote! {
                    #support::ModuleField::visit_field(&self.#access, prefix, #field_name, visitor);
                });
                set_training.push(quote! {
                    #support::ModuleField::set_training_field(&self.#access, training);
                });
                is_training.push(quote! {
                    && #support::ModuleField::is_training_field(&self.#access)
                });
                children.push(quote! {
                    #support::ModuleField::visit_children_field(&self.#access, #field_name, visitor);
                });
            }
            Role::Buffer => visits.push(quote! {
                #support::BufferField::visit_buffer(&self.#access, prefix, #field_name, visitor);
            }),
            Role::Skip => {}
        }
    }

    Ok(quote! {
        impl #impl_generics #support::Module for #name #type_generics #where_clause {
            fn forward(&self, input: &#support::Tensor) -> #support::Result<#support::Tensor> {
                #[allow(unused_imports)]
                use #support::MissingInherentForward as _;
                // Resolves to the struct's inherent `forward`; without one, to the fallback
                // trait whose return type does not fit (a compile error, not a recursion).
                <#name #type_generics>::forward(self, input)
            }

            #[allow(unused_variables)]
            fn visit(
                &self,
                prefix: &str,
                visitor: &mut dyn FnMut(&str, &#support::Parameter, #support::Kind),
            ) {
                #(#visits)*
            }

            #[allow(unused_variables)]
            fn set_training(&self, training: bool) {
                #(#set_training)*
            }

            fn is_training(&self) -> bool {
                true #(#is_training)*
            }

            #[allow(unused_variables)]
            fn visit_children<'a>(
                &'a self,
                visitor: &mut dyn FnMut(&str, &'a dyn #support::Module),
            ) {
                #(#children)*
            }
        }
    })
}
