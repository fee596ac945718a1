//! What a field of a struct holds, read from its type: the one classification the derive
//! (to write `zero_like`) and the function macro (to split a struct into its fields) share.

use syn::{Ident, Type};

/// The shape of a field's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// `f64`, `f32`, or a type parameter of the struct (a generic float).
    Float,
    /// An integer or `bool`: a constant.
    Int,
    /// `Vec<E>` or `[E; N]`.
    Seq { vec: bool, elem: Box<Shape> },
    /// Another struct (which must derive `Differentiable`): its path, as written.
    Nested(syn::Path),
    /// A type known to hold nothing to differentiate (`String`, `char`, a range of
    /// integers...), or a field marked `#[differentiable(skip)]`.
    Constant,
    /// A type that holds floats in a way phidiff does not split yet (a tuple, a reference,
    /// an `Option`): the reason, for the error.
    Unsupported(&'static str),
}

impl Shape {
    /// Whether the shape holds floats (its derivative is not empty).
    pub fn is_active(&self) -> bool {
        match self {
            Shape::Float | Shape::Nested(_) => true,
            Shape::Seq { elem, .. } => elem.is_active(),
            Shape::Int | Shape::Constant | Shape::Unsupported(_) => false,
        }
    }

    /// Whether the shape is floats in nested `Vec`s and arrays (a buffer the compiler
    /// knows), as opposed to structs in them.
    pub fn is_float_buffer(&self) -> bool {
        match self {
            Shape::Seq { elem, .. } => matches!(**elem, Shape::Float) || elem.is_float_buffer(),
            _ => false,
        }
    }
}

const INTEGERS: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128", "bool",
];

/// Types with nothing to differentiate inside (a field of one is a constant).
const CONSTANT_TYPES: &[&str] = &["String", "str", "char", "PathBuf", "Path", "Duration"];

/// Wrappers that may hold floats but are not split (yet).
const OPAQUE_WRAPPERS: &[&str] = &[
    "Option", "Box", "Rc", "Arc", "RefCell", "Cell", "HashMap", "BTreeMap", "HashSet", "BTreeSet",
    "VecDeque", "Result", "Mutex", "RwLock",
];

/// The shape of `ty`, where `floats` are the type parameters that are floats.
pub fn shape_of(ty: &Type, floats: &[Ident]) -> Shape {
    match crate::parse::signature::ungroup(ty) {
        Type::Array(a) => Shape::Seq {
            vec: false,
            elem: Box::new(shape_of(&a.elem, floats)),
        },
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Shape::Constant;
            };
            let name = last.ident.to_string();
            let single = p.path.segments.len() == 1 && last.arguments.is_none();
            if single && (name == "f64" || name == "f32" || floats.contains(&last.ident)) {
                return Shape::Float;
            }
            if single && INTEGERS.contains(&name.as_str()) {
                return Shape::Int;
            }
            if name == "Vec" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(e)) = a.args.first() {
                        return Shape::Seq {
                            vec: true,
                            elem: Box::new(shape_of(e, floats)),
                        };
                    }
                }
                return Shape::Constant;
            }
            if CONSTANT_TYPES.contains(&name.as_str()) {
                return Shape::Constant;
            }
            if OPAQUE_WRAPPERS.contains(&name.as_str()) || name == "PhantomData" {
                return if name == "PhantomData" || !mentions_float(ty, floats) {
                    Shape::Constant
                } else {
                    Shape::Unsupported(
                        "the floats inside this type are not split into adjoints yet; hold them in a plain field, an array, a `Vec` or a struct deriving `Differentiable`, or mark the field `#[differentiable(skip)]`",
                    )
                };
            }
            Shape::Nested(p.path.clone())
        }
        Type::Tuple(t) if t.elems.is_empty() => Shape::Constant,
        other if !mentions_float(other, floats) => Shape::Constant,
        Type::Tuple(_) => Shape::Unsupported(
            "tuple fields are not split into floats yet; use an array or a struct deriving `Differentiable`",
        ),
        Type::Reference(_) => Shape::Unsupported(
            "a struct that borrows floats cannot hold their adjoints (its shadow would borrow them too); own them (`Vec<f64>`, arrays) or pass the slices as parameters",
        ),
        _ => Shape::Unsupported("the floats inside this type are not split into adjoints; hold them in a plain field, an array, a `Vec` or a struct deriving `Differentiable`, or mark the field `#[differentiable(skip)]`"),
    }
}

/// Whether `ty` names a float type anywhere.
fn mentions_float(ty: &Type, floats: &[Ident]) -> bool {
    fn walk(t: proc_macro2::TokenStream, floats: &[Ident]) -> bool {
        t.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "f64" || i == "f32" || floats.contains(&i),
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), floats),
            _ => false,
        })
    }
    walk(quote::quote!(#ty), floats)
}

/// Whether a field carries `#[differentiable(skip)]`.
pub fn is_skipped(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    let mut skip = false;
    for a in attrs.iter().filter(|a| a.path().is_ident("differentiable")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else {
                Err(m.error("phidiff: the field attribute is `#[differentiable(skip)]`"))
            }
        })?;
    }
    Ok(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(ty: &str) -> Shape {
        shape_of(
            &syn::parse_str(ty).unwrap(),
            &[syn::parse_str("T").unwrap()],
        )
    }

    #[test]
    fn shapes() {
        assert_eq!(shape("f64"), Shape::Float);
        assert_eq!(shape("T"), Shape::Float);
        assert_eq!(shape("usize"), Shape::Int);
        assert!(shape("Vec<[T; 3]>").is_float_buffer());
        assert!(!shape("Vec<Body>").is_float_buffer());
        assert!(shape("Vec<Body>").is_active());
        assert_eq!(shape("String"), Shape::Constant);
        assert_eq!(shape("Option<usize>"), Shape::Constant);
        assert!(matches!(shape("Option<f64>"), Shape::Unsupported(_)));
        assert!(matches!(shape("(f64, f64)"), Shape::Unsupported(_)));
        assert!(matches!(shape("&'a [f64]"), Shape::Unsupported(_)));
        assert!(matches!(shape("geom::Vec3<T>"), Shape::Nested(_)));
    }
}
