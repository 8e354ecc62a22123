//! The one pager of every list the plugin reads: the one-shot reads (`fetch.rs`) and the
//! live modes' list before each watch (`cluster::watching::reflector`) alike. Pages of 500, as
//! kubectl asks. The next page is asked for before this one is decoded: the moment a page's
//! text is in, its continue token is read off it (a cheap scan that skips the items), the next
//! request goes out, and the page is decoded on a blocking thread while the server builds the
//! next one. So a list's wall time is near the larger of the server's work and the plugin's,
//! not their sum, and at most two pages are held at once: the one being decoded, and the one
//! arriving. A continue token that expired (410 Gone) starts the list over from its first page,
//! once, as client-go's pager does. A list that does not end is an error: a continue token
//! given twice, or more than [`bounds::MAX_PAGES`] pages (a body past its bound is the HTTP
//! layer's error, [`bounds::BODY_LIMIT`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;

use super::wire;
use crate::cluster::connecting::bounds;
use crate::log::Log;

/// Objects a page: kubectl's `--chunk-size` default.
pub const PAGE: u32 = 500;

/// One page of a list.
pub struct Page<K> {
    /// The objects that read. One that could not be read is left out, and said once on stderr
    /// (`Warning: cannot read KIND NS/NAME, left out: ...`) by [`Pager::next`].
    pub items: Vec<K>,
    /// The list started over from its first page (the continue token expired): whatever the
    /// earlier pages gave is to be dropped.
    pub restarted: bool,
    /// The list's resourceVersion, as this page gives it: a watch goes on from the last one's.
    pub resource_version: Option<String>,
}

/// Why a list stopped.
#[derive(Debug)]
pub enum Failed {
    /// A request or its answer failed (an error status, the transport, a page that is no
    /// list): what that means is the caller's to say.
    Request(kube::Error),
    /// The list does not end ([`bounds::MAX_PAGES`], or a continue token given twice): the
    /// error's text, naming the bound and the list's path.
    Bound(String),
}

/// One page's request: its parameters, how long the answer took, and the answer's text.
type Answer = (ListParams, Duration, Result<String, kube::Error>);

/// A page's request under way on the runtime. Dropping it (the list ended early, or failed)
/// cancels the request, so no read outlives the pager that asked for it.
struct PendingPage(tokio::task::JoinHandle<Answer>);

impl Drop for PendingPage {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl PendingPage {
    async fn answer(mut self) -> Answer {
        match (&mut self.0).await {
            Ok(answer) => answer,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// What a list's text says of the list itself, read without decoding its items.
#[derive(Default, Debug, PartialEq)]
struct Head {
    /// The continue token; `None` on the last page.
    token: Option<String>,
    resource_version: Option<String>,
}

/// The continue token and resourceVersion of a list's text, without decoding its items.
/// Kube-apiserver writes a custom resource's list with its keys sorted (`metadata` last), so
/// they can only be found once the page is in whole. Empty when the text is not a list (the
/// full decode then says what is wrong).
fn head(text: &str) -> Head {
    #[derive(serde::Deserialize)]
    struct List {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(rename = "continue", default)]
        token: Option<String>,
        #[serde(default)]
        resource_version: Option<String>,
    }
    let Ok(List { metadata }) = serde_json::from_str::<List>(text) else { return Head::default() };
    Head {
        token: metadata.token.filter(|t| !t.is_empty()),
        resource_version: metadata.resource_version.filter(|v| !v.is_empty()),
    }
}

/// One list, read page by page.
pub struct Pager<K> {
    api: Api<K>,
    /// The objects listed, as errors name them ("Workloads", "Leases").
    what: String,
    /// The page to ask for next, when it has not been asked for yet.
    next: Option<ListParams>,
    /// The page already asked for, while the one before it is decoded.
    asked: Option<PendingPage>,
    /// Whether to ask for the next page ahead (off for a probe, which reads one page only).
    ahead: bool,
    /// The list already started over once, after its continue token expired.
    restarted: bool,
    /// The continue tokens given so far (hashed): a token given twice, or more than
    /// [`bounds::MAX_PAGES`] of them, is a list that does not end.
    tokens: HashSet<u64>,
}

impl<K> Pager<K>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    /// Every page of `api` as `params` (its selectors) ask, [`PAGE`] objects a page.
    pub fn new(api: Api<K>, what: &str, params: ListParams) -> Self {
        Pager {
            api,
            what: what.to_string(),
            next: Some(params.limit(PAGE)),
            asked: None,
            ahead: true,
            restarted: false,
            tokens: HashSet::new(),
        }
    }

    /// The first page of `limit` objects and nothing after it.
    pub fn first_page(api: Api<K>, what: &str, limit: u32) -> Self {
        Pager {
            next: Some(ListParams::default().limit(limit)),
            ahead: false,
            ..Pager::new(api, what, ListParams::default())
        }
    }

    /// The list's path, for messages.
    pub fn path(&self) -> String {
        self.api.resource_url().to_string()
    }

    /// Sends the request for one page on the runtime, so that it goes on while this task
    /// decodes the page before it.
    fn ask(&self, params: ListParams) -> PendingPage {
        let client = self.api.clone().into_client();
        let request = kube::core::Request::new(self.api.resource_url()).list(&params);
        PendingPage(tokio::spawn(async move {
            let started = Instant::now();
            let text = match request {
                Ok(mut request) => {
                    request.extensions_mut().insert("list");
                    client.request_text(request).await
                }
                Err(e) => Err(kube::Error::BuildRequest(e)),
            };
            (params, started.elapsed(), text)
        }))
    }

    /// The next page; `None` once the list is done. After a failure the list is over: the
    /// page asked for ahead is cancelled. Each request is logged at `-v 6` as `LIST URL CODE
    /// in Nms`.
    pub async fn next(&mut self, log: &Log) -> Result<Option<Page<K>>, Failed> {
        let mut restarted = false;
        loop {
            let asked = match (self.asked.take(), self.next.take()) {
                (Some(asked), _) => asked,
                (None, Some(params)) => self.ask(params),
                (None, None) => return Ok(None),
            };
            let (params, took, result) = asked.answer().await;
            self.logged(log, &params, &result, took);
            let text = match result {
                Ok(text) => text,
                Err(kube::Error::Api(s)) if s.code == 410 && params.continue_token.is_some() && !self.restarted => {
                    log.info(
                        1,
                        &format!(
                            "the {} list's continue token expired (410 Gone); listing again from the first page",
                            self.what
                        ),
                    );
                    self.restarted = true;
                    self.tokens.clear();
                    restarted = true;
                    self.next = Some(ListParams { continue_token: None, ..params });
                    continue;
                }
                Err(e) => return Err(Failed::Request(e)),
            };
            let head = head(&text);
            if self.ahead
                && let Some(token) = &head.token
            {
                self.endless(token)?;
                self.asked = Some(self.ask(params.continue_token(token)));
            }
            let kind = self.what.strip_suffix('s').unwrap_or(&self.what).to_string();
            let decoded = tokio::task::spawn_blocking(move || wire::decode_page::<K>(&text, &kind))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            return match decoded {
                Ok((items, unreadable)) => {
                    for line in &unreadable {
                        log.stderr().ours(&format!("Warning: {}", crate::text::sanitize::escape(line)));
                    }
                    Ok(Some(Page { items, restarted, resource_version: head.resource_version }))
                }
                Err(e) => {
                    self.asked = None;
                    Err(Failed::Request(kube::Error::SerdeError(e)))
                }
            };
        }
    }

    fn logged(&self, log: &Log, params: &ListParams, result: &Result<String, kube::Error>, took: Duration) {
        if !log.enabled(6) {
            return;
        }
        let code = match result {
            Ok(_) => "200".to_string(),
            Err(kube::Error::Api(s)) => s.code.to_string(),
            Err(_) => "failed".to_string(),
        };
        log.info(
            6,
            &format!(
                "LIST {}?limit={}{} {code} in {}ms",
                self.api.resource_url(),
                params.limit.unwrap_or(PAGE),
                if params.continue_token.is_some() { "&continue=..." } else { "" },
                took.as_millis()
            ),
        );
    }

    /// Refuses a continue token given before (the list would go round for ever) and a list
    /// past [`bounds::MAX_PAGES`] pages.
    fn endless(&mut self, token: &str) -> Result<(), Failed> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let hash = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(token);
        let path = self.api.resource_url();
        if !self.tokens.insert(hash) {
            return Err(Failed::Bound(format!(
                "the API server's {} list at {path} does not end: page {} gave the same continue token as an earlier page",
                self.what,
                self.tokens.len() + 1
            )));
        }
        if self.tokens.len() >= bounds::MAX_PAGES {
            return Err(Failed::Bound(format!(
                "the API server's {} list at {path} did not end within {} pages, the bound on one list",
                self.what,
                bounds::MAX_PAGES
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str) -> Option<String> {
        head(text).token
    }

    #[test]
    fn the_continue_token_is_read_from_a_custom_resource_list_whose_metadata_comes_last() {
        let page = r#"{"apiVersion":"kueue.x-k8s.io/v1beta2","items":[{"metadata":{"name":"a","annotations":{"continue":"no"},"resourceVersion":"5"}},{"metadata":{"name":"b"}}],"kind":"WorkloadList","metadata":{"continue":"tok-2","resourceVersion":"9"}}"#;
        assert_eq!(head(page), Head { token: Some("tok-2".into()), resource_version: Some("9".into()) });
    }

    #[test]
    fn the_continue_token_is_read_from_a_built_in_list_whose_metadata_comes_first() {
        let page = r#"{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"tok"},"items":[]}"#;
        assert_eq!(token(page).as_deref(), Some("tok"));
    }

    #[test]
    fn a_last_page_or_a_text_that_is_no_list_has_no_continue_token() {
        assert_eq!(
            head(r#"{"items":[],"metadata":{"resourceVersion":"9"}}"#),
            Head { token: None, resource_version: Some("9".into()) },
            "the last page still gives the version to watch from"
        );
        assert_eq!(token(r#"{"items":[],"metadata":{"continue":""}}"#), None);
        assert_eq!(token(r#"{"items":[]}"#), None);
        assert_eq!(token(r#"{"items":[{"#), None);
        assert_eq!(head("<html>"), Head::default());
    }
}
