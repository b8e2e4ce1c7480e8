//! The table's rows against each other, the router, the OpenAPI document and the gRPC
//! service's descriptor.

use axum::http::{HeaderMap, header};

use super::credentials::X_VAULT_TOKEN;
use super::*;
use crate::callers::Key;
use crate::pipeline::GRPC_SERVICE_PREFIX;

/// The row labelled `label`.
fn row(label: &str) -> &'static Endpoint {
    ENDPOINTS.iter().find(|e| e.label == label).unwrap_or_else(|| panic!("no row {label}"))
}

/// The label of the row a path leads to.
fn of_path(path: &str) -> Option<&'static str> {
    endpoints().of_path(path).map(|i| ENDPOINTS[i].label)
}

/// What makes a row whole: each column says something the others agree with.
#[test]
fn every_row_is_complete_and_consistent() {
    let defaults = crate::config::Settings::defaults();
    let mut templates: Vec<&str> = Vec::new();
    for e in ENDPOINTS {
        let label = e.label;
        // The label is the documented path, but where the path is everyone's (KMS's `/`).
        let first = *e.paths.first().unwrap_or_else(|| panic!("{label} has no path"));
        assert!(label == first || !label.starts_with('/'), "{label}");
        templates.extend(e.paths);
        // Methods: none twice, HEAD with every GET (the router answers it).
        assert!(!e.methods.is_empty(), "{label}");
        for (j, m) in e.methods.iter().enumerate() {
            assert!(!e.methods[..j].contains(m), "{label} lists {m:?} twice");
        }
        assert_eq!(e.methods.contains(&Verb::Get), e.methods.contains(&Verb::Head), "{label}");
        // Who and how much: public rows have no caller and no policy route, and only they
        // take the peer's share; a signed request is always admitted to a route.
        let public = e.guard.public();
        assert_eq!(public, matches!(e.charge, Charge::Peer | Charge::PeerWaiting), "{label}");
        assert!(!public || e.guard.route.is_none(), "{label}: a public row with a policy route");
        assert!(!matches!(e.guard.credentials, Credentials::Signature(_)) || e.guard.route.is_some());
        // A drop-in section serves exactly the routes it is off for by default; `[tickets]`
        // serves its own rows (its policy route's and its public one).
        let tickets = label.starts_with("/tickets") || label.starts_with("/results");
        let by_section = e.guard.route.is_some_and(|r| !defaults.serves(r)) && !tickets;
        assert_eq!(e.availability == Availability::Section, by_section, "{label}");
        assert_eq!(e.availability == Availability::Tickets, tickets, "{label}");
        // The handler answers the methods listed.
        let answers: &[Verb] = match e.handler {
            Handler::Random(_) => GET_POST,
            Handler::State(_) | Handler::Caller(_) => GET,
            Handler::Router(_) => e.methods,
        };
        assert_eq!(e.methods, answers, "{label}");
        assert!(!matches!(e.handler, Handler::Caller(_)) || !public, "{label}: no caller to answer");
        assert!(!e.receipt || matches!(e.handler, Handler::Random(_)), "{label}");
        // A public gRPC method is admitted as health and reflection are: the public cap and
        // each peer's share of it (no waiting for a beacon round).
        assert!(
            e.grpc.is_empty() || !public || e.charge == Charge::Peer,
            "{label}: a public gRPC method that waits"
        );
        // Every template leads back to its row.
        for path in e.paths {
            let concrete = path
                .replace("{a}", "platform")
                .replace("{b}", "32")
                .replace("{chain}", &"ab".repeat(32))
                .replace("{round}", "7");
            assert_eq!(of_path(&concrete), Some(label), "{path}");
        }
    }
    let count = templates.len();
    templates.sort_unstable();
    templates.dedup();
    assert_eq!(templates.len(), count, "a path template in two rows");
    let mut labels: Vec<&str> = ENDPOINTS.iter().map(|e| e.label).collect();
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), ENDPOINTS.len(), "labels are unique");
    assert!(ENDPOINTS.len() <= crate::pipeline::MAX_ENDPOINTS);
}

/// Every policy route guards some row, and its name is the label of the first row it guards.
#[test]
fn each_route_is_named_by_its_first_row() {
    for route in Route::ALL {
        let first = ENDPOINTS.iter().find(|e| e.guard.route == Some(route));
        assert_eq!(first.map(|e| e.label), Some(route.name()), "{route:?}");
    }
}

/// The document has every row's path, with exactly the row's methods (but HEAD).
#[test]
fn the_document_describes_every_row() {
    let rules = crate::service::Rules::from_settings(&crate::config::Settings::defaults());
    let document = openapi::document(&rules, true, Some(65_536), true, |_| true);
    assert_eq!(document.paths.paths.len(), ENDPOINTS.len());
    for e in ENDPOINTS {
        let label = e.label;
        let item = document.paths.paths.get(e.paths[0]).unwrap_or_else(|| panic!("{label}"));
        let has = |verb: Verb| e.methods.contains(&verb);
        assert_eq!(item.get.is_some(), has(Verb::Get), "{label}");
        assert_eq!(item.post.is_some(), has(Verb::Post), "{label}");
        assert_eq!(item.put.is_some(), has(Verb::Put), "{label}");
        assert!(item.delete.is_none() && item.patch.is_none(), "{label}");
    }
}

#[test]
fn paths_are_matched_as_the_router_matches_them() {
    assert_eq!(of_path("/"), Some("kms"));
    assert_eq!(of_path("/kms"), None);
    assert_eq!(of_path("/v1/sys/tools/randomx"), None);
    assert_eq!(of_path("/v1/transit/random/hex"), Some(vault::TRANSIT_PATH));
    // The beacon's paths: static segments first.
    assert_eq!(of_path("/beacon/public/info"), Some("/beacon/public/{round}"));
    assert_eq!(of_path("/beacon/public/latest"), Some("/beacon/public/latest"));
    assert_eq!(of_path("/beacon/x/public/latest"), Some("/beacon/public/latest"));
    assert_eq!(of_path("/beacon/info/info"), Some("/beacon/info"));
    assert_eq!(of_path("/beacon/x/chains"), None);
    assert_eq!(of_path("/beacon/x/public/7/8"), None);
    assert_eq!(of_path("/beacon/x/public/"), None);
    // An empty parameter where it is not the last segment is the router's match too.
    assert_eq!(of_path("/beacon//info"), Some("/beacon/info"));
    assert_eq!(of_path("/v1/sys/tools/random//32"), Some(vault::SYS_PATH));
    assert_eq!(of_path("/v1/sys/tools/random/"), None);
    assert_eq!(of_path("/beacon"), None);
    assert_eq!(of_path("/drbgd.v1.RandomnessService/GetBits"), None);
}

#[test]
fn every_grpc_method_is_a_rows_and_only_its_own() {
    use prost::Message;
    // The methods the service declares, read from its descriptor: each is in one row (a new
    // method must be added to the row serving the same thing), and nothing else is.
    let set = prost_types::FileDescriptorSet::decode(crate::grpc::pb::FILE_DESCRIPTOR_SET).unwrap();
    let mut declared: Vec<String> = set
        .file
        .iter()
        .flat_map(|f| &f.service)
        .filter(|s| s.name() == "RandomnessService")
        .flat_map(|s| s.method.iter().map(|m| m.name().to_string()))
        .collect();
    let mut listed: Vec<String> =
        ENDPOINTS.iter().flat_map(|e| e.grpc.iter().map(|n| n.to_string())).collect();
    declared.sort();
    listed.sort();
    assert_eq!(declared, listed);
    let table = endpoints();
    let route = |path: &str| table.grpc_method(path).map(|(name, guard)| (name, guard.route));
    for e in ENDPOINTS {
        for &name in e.grpc {
            assert_eq!(route(&format!("{GRPC_SERVICE_PREFIX}{name}")), Some((name, e.guard.route)));
            assert_eq!(route(&format!("{GRPC_SERVICE_PREFIX}{name}x")), None);
            assert_eq!(route(&format!("/other.Service/{name}")), None);
        }
    }
    assert_eq!(route(&format!("{GRPC_SERVICE_PREFIX}GetBits")), Some(("GetBits", Some(Route::Bits))));
    assert_eq!(route(&format!("{GRPC_SERVICE_PREFIX}GetUsage")), Some(("GetUsage", None)));
    assert_eq!(route("/grpc.health.v1.Health/Check"), None);
    // The path prefix is the service's full name.
    assert_eq!(GRPC_SERVICE_PREFIX, format!("/{}/", crate::grpc::SERVICE_NAME));
}

#[test]
fn vault_rows_read_the_vault_token_first() {
    let key = |guard: Guard, headers: &HeaderMap| -> Option<String> {
        guard.credentials.key(headers).map(|k| match k {
            Key::Bearer(b) => format!("bearer {}", String::from_utf8_lossy(b)),
            Key::Raw(r) => format!("raw {}", String::from_utf8_lossy(r)),
        })
    };
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, "Bearer k".parse().unwrap());
    assert_eq!(key(VAULT, &headers).as_deref(), Some("bearer Bearer k"));
    headers.insert(X_VAULT_TOKEN, "".parse().unwrap());
    assert_eq!(key(VAULT, &headers).as_deref(), Some("bearer Bearer k"), "empty is none");
    headers.insert(X_VAULT_TOKEN, "t".parse().unwrap());
    assert_eq!(key(VAULT, &headers).as_deref(), Some("raw t"));
    assert_eq!(key(row("/bits").guard, &headers).as_deref(), Some("bearer Bearer k"));
    assert!(key(Guard::PUBLIC, &headers).is_none() && key(KMS, &headers).is_none());
    // Only KMS's and RANDOM.ORG's rows check a signed head (their credentials are in the
    // body), and only public rows read nothing at all.
    for e in ENDPOINTS {
        let signed = matches!(e.guard.credentials, Credentials::Signature(_));
        assert_eq!(signed, e.label == "kms" || e.label == randomorg::PATH, "{}", e.label);
    }
}
