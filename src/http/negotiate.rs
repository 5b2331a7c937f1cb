//! Content negotiation: `?format=` wins; otherwise `Accept` with q-values, the most specific
//! matching range deciding each type's quality and our order breaking ties. A missing or
//! wildcard `Accept` (what browsers send) means JSON; an explicit but unsupported type is 406.

use super::error::AppError;
pub use crate::service::ask::Format;

struct Range<'a> {
    ty: &'a str,
    sub: &'a str,
    q: f32,
}

fn parse_accept(accept: &str) -> Vec<Range<'_>> {
    accept
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let media = pieces.next()?.trim();
            let (ty, sub) = media.split_once('/')?;
            let mut q = 1.0;
            for p in pieces {
                if let Some((k, v)) = p.split_once('=')
                    && k.trim().eq_ignore_ascii_case("q")
                {
                    q = v.trim().parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0);
                }
            }
            Some(Range {
                ty: ty.trim(),
                sub: sub.trim(),
                q,
            })
        })
        .collect()
}

/// Quality of `media` under the ranges: the most specific matching range decides.
fn quality(ranges: &[Range<'_>], media: &str) -> Option<f32> {
    let (ty, sub) = media.split_once('/').expect("media types have a slash");
    let mut best: Option<(u8, f32)> = None;
    for r in ranges {
        let specificity = if r.ty.eq_ignore_ascii_case(ty) && r.sub.eq_ignore_ascii_case(sub) {
            3
        } else if r.ty.eq_ignore_ascii_case(ty) && r.sub == "*" {
            2
        } else if r.ty == "*" && r.sub == "*" {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, r.q));
        }
    }
    best.map(|(_, q)| q)
}

/// Choose the representation for a request.
pub fn negotiate(format_param: Option<&str>, accept: Option<&str>) -> Result<Format, AppError> {
    if let Some(name) = format_param {
        return Format::from_name(name).ok_or_else(|| AppError::NotAcceptable {
            parameter: "format".into(),
            requested: name.into(),
            allowed: Format::names(),
        });
    }
    let accept = match accept.map(str::trim) {
        None | Some("") => return Ok(Format::Json),
        Some(a) => a,
    };
    let ranges = parse_accept(accept);
    let mut chosen: Option<(f32, Format)> = None;
    for f in Format::ALL {
        let q = f
            .media_types()
            .iter()
            .filter_map(|m| quality(&ranges, m))
            .fold(None, |acc: Option<f32>, q| {
                Some(acc.map_or(q, |a| a.max(q)))
            });
        if let Some(q) = q
            && q > 0.0
            && chosen.is_none_or(|(best, _)| q > best)
        {
            chosen = Some((q, f));
        }
    }
    chosen
        .map(|(_, f)| f)
        .ok_or_else(|| AppError::NotAcceptable {
            parameter: "Accept".into(),
            requested: accept.into(),
            allowed: Format::canonical_types(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_browsers_get_json() {
        assert_eq!(negotiate(None, None).unwrap(), Format::Json);
        assert_eq!(negotiate(None, Some("*/*")).unwrap(), Format::Json);
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert_eq!(negotiate(None, Some(browser)).unwrap(), Format::Json);
    }

    #[test]
    fn q_values_and_specificity() {
        assert_eq!(
            negotiate(None, Some("application/json;q=0.5, text/csv")).unwrap(),
            Format::Csv
        );
        assert_eq!(negotiate(None, Some("text/*")).unwrap(), Format::Csv);
        assert_eq!(
            negotiate(None, Some("*/*;q=0.1, application/vnd.apache.parquet")).unwrap(),
            Format::Parquet
        );
        // json explicitly refused, anything else fine: the next preference wins.
        assert_eq!(
            negotiate(None, Some("application/json;q=0, */*")).unwrap(),
            Format::Csv
        );
        assert_eq!(
            negotiate(None, Some("application/x-ndjson")).unwrap(),
            Format::Ndjson
        );
    }

    #[test]
    fn format_parameter_overrides_accept() {
        assert_eq!(
            negotiate(Some("arrow"), Some("text/csv")).unwrap(),
            Format::Arrow
        );
        assert_eq!(negotiate(Some("CSV"), None).unwrap(), Format::Csv);
    }

    #[test]
    fn unsupported_is_406() {
        let e = negotiate(None, Some("text/html")).unwrap_err();
        assert_eq!(e.status(), axum::http::StatusCode::NOT_ACCEPTABLE);
        let e = negotiate(Some("xml"), None).unwrap_err();
        assert!(
            matches!(e, AppError::NotAcceptable { ref parameter, .. } if parameter == "format")
        );
    }
}
