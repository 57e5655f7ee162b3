//! The discovery client: the server's version, groups and resources, from memory, the disk
//! cache or the server, in that order.
//!
//! Why a client of its own: what a server serves changes rarely (a CRD installed, an
//! upgrade) while programs ask often (every `kubectl get`), so answers are kept in memory
//! and, optionally, on disk for other processes, and refreshed when they are old or when a
//! lookup misses (see [`Discovery::find`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::aggregated::{is_aggregated, GroupDiscoveryList, AGGREGATED_ACCEPT};
use super::disk_cache::{DiskCache, DEFAULT_TTL};
use super::legacy;
use super::types::{DiscoveryData, ServerGroup, ServerResource, ServerVersion};
use crate::client::{decode_json, Client, Method};
use crate::Result;

/// Discovery of one server: groups, versions and resources, cached.
///
/// Aggregated discovery (`apidiscovery.k8s.io/v2`: `/api` and `/apis`, two requests,
/// revalidated by ETag) first; the legacy documents (`/api`, `/apis`, then one request per
/// group-version) when the server answers the plain form. Answers are kept in memory for
/// the TTL (10 minutes by default) and, with a [`DiskCache`], on disk in kubectl's format.
///
/// ```
/// use kube_informer::testing::ApiServer;
/// use kube_informer::Client;
///
/// let server = ApiServer::start();
/// let client = Client::new(server.client_config()).unwrap();
/// let discovery = client.discovery();
/// let apps = discovery.groups().unwrap().into_iter().find(|g| g.name == "apps").unwrap();
/// assert_eq!(apps.preferred_version(), Some("v1"));
/// let deploy = discovery.resources("apps", "v1").unwrap()
///     .into_iter().find(|r| r.kind == "Deployment").unwrap();
/// assert_eq!(deploy.plural, "deployments");
/// assert!(deploy.short_names.contains(&"deploy".to_string()));
/// assert!(deploy.subresources.contains(&"scale".to_string()));
/// assert!(!discovery.server_version().unwrap().git_version.is_empty());
/// ```
pub struct Discovery {
    client: Client,
    disk: Option<DiskCache>,
    ttl: Duration,
    state: Mutex<State>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery")
            .field("client", &self.client)
            .field("disk", &self.disk.as_ref().map(DiskCache::dir))
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    data: Option<Arc<DiscoveryData>>,
    /// When `data` was taken (from the server or the disk).
    taken: Option<Instant>,
    /// `data` came from the server through this client (not from the disk): a lookup that
    /// misses in it does not refresh.
    from_server: bool,
    /// The last aggregated answers of `/api` and `/apis`: ETag and body.
    etags: [Option<(String, Vec<u8>)>; 2],
}

/// Where discovery data came from, for [`Discovery::data_with_origin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Kept in memory from an earlier call.
    Memory,
    /// Read from the disk cache (with any group-version missing from it fetched alone).
    Disk,
    /// Fetched from the server.
    Server,
}

impl Client {
    /// A discovery client for this client's server, in memory only (see [`Discovery`]).
    pub fn discovery(&self) -> Discovery {
        Discovery::new(self.clone())
    }
}

impl Discovery {
    /// Discovery through `client`, cached in memory only.
    pub fn new(client: Client) -> Discovery {
        Discovery {
            client,
            disk: None,
            ttl: DEFAULT_TTL,
            state: Mutex::new(State::default()),
        }
    }

    /// Also caches on disk (read before asking the server, written after).
    pub fn with_disk_cache(mut self, cache: DiskCache) -> Self {
        self.disk = Some(cache);
        self
    }

    /// Caches on disk where kubectl does (`~/.kube/cache/discovery/<host>`); in memory only
    /// when there is no home directory.
    pub fn with_kubectl_disk_cache(self) -> Self {
        match DiskCache::kubectl_root() {
            Some(root) => {
                let cache = DiskCache::new(root, self.client.server());
                self.with_disk_cache(cache)
            }
            None => self,
        }
    }

    /// How long answers kept in memory count (default 10 minutes; the disk cache has its
    /// own, [`DiskCache::with_ttl`]).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The client it asks through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The server's `/version` (not cached).
    pub fn server_version(&self) -> Result<ServerVersion> {
        let response = self.client.request(Method::GET, "/version").send()?;
        decode_json(response.request(), response.body(), "version")
    }

    /// The groups, the core group (named `""`) first when served, each with its preferred
    /// version first.
    pub fn groups(&self) -> Result<Vec<ServerGroup>> {
        Ok(self.data()?.groups.clone())
    }

    /// The resources of one group-version (`""` for the core group); empty when the server
    /// does not serve it.
    pub fn resources(&self, group: &str, version: &str) -> Result<Vec<ServerResource>> {
        Ok(self
            .data()?
            .resources_of(group, version)
            .map(<[ServerResource]>::to_vec)
            .unwrap_or_default())
    }

    /// Everything discovered: from memory, else from the disk cache, else from the server.
    pub fn data(&self) -> Result<Arc<DiscoveryData>> {
        Ok(self.data_with_origin()?.0)
    }

    /// [`data`](Self::data), and where it came from.
    pub fn data_with_origin(&self) -> Result<(Arc<DiscoveryData>, Origin)> {
        let mut state = self.state.lock();
        if let (Some(data), Some(taken)) = (&state.data, state.taken) {
            if taken.elapsed() < self.ttl {
                return Ok((data.clone(), Origin::Memory));
            }
        }
        if let Some(disk) = &self.disk {
            if let Some(loaded) = disk.load() {
                // As kubectl: a group-version without a sound file of its own (one that
                // answered 404 or 503 when the cache was written, one expired or damaged) is
                // fetched alone; the rest comes from the disk.
                let mut data = loaded.data;
                for (group, version) in &loaded.missing {
                    if legacy::fetch_group_version(&self.client, group, version, &mut data)? {
                        disk.store_group_version(&data, group, version);
                    }
                }
                let data = Arc::new(data);
                state.data = Some(data.clone());
                state.taken = Some(Instant::now());
                state.from_server = false;
                return Ok((data, Origin::Disk));
            }
        }
        Ok((self.fetch(&mut state)?, Origin::Server))
    }

    /// Fetches everything from the server now (revalidating aggregated answers by ETag) and
    /// rewrites the disk cache.
    pub fn refresh(&self) -> Result<Arc<DiscoveryData>> {
        let mut state = self.state.lock();
        self.fetch(&mut state)
    }

    /// Forgets what is kept in memory; the next call reads the disk or the server.
    pub fn invalidate(&self) {
        let mut state = self.state.lock();
        state.data = None;
        state.taken = None;
    }

    /// Looks something up with `find`; when it finds nothing in data that came from the
    /// disk cache (which another process may have written before a CRD was installed),
    /// fetches from the server once and looks again. Data this client fetched itself is
    /// not refetched on a miss: a name that does not exist costs no request.
    pub fn find<T>(&self, find: impl Fn(&DiscoveryData) -> Option<T>) -> Result<Option<T>> {
        let (data, origin) = self.data_with_origin()?;
        if let Some(found) = find(&data) {
            return Ok(Some(found));
        }
        let refetch = match origin {
            Origin::Disk => true,
            Origin::Memory => !self.state.lock().from_server,
            Origin::Server => false,
        };
        if !refetch {
            return Ok(None);
        }
        let data = self.refresh()?;
        Ok(find(&data))
    }

    fn fetch(&self, state: &mut State) -> Result<Arc<DiscoveryData>> {
        let mut data = DiscoveryData::default();
        for (slot, path) in ["/api", "/apis"].into_iter().enumerate() {
            let mut request = self
                .client
                .request(Method::GET, path)
                .accept(AGGREGATED_ACCEPT);
            if let Some((etag, _)) = &state.etags[slot] {
                request = request.header("If-None-Match", etag);
            }
            let (aggregated, body) = match request.send() {
                Ok(response) => {
                    let aggregated = is_aggregated(response.header("content-type"));
                    let etag = response.header("etag").map(str::to_owned);
                    let body = response.into_body();
                    state.etags[slot] = match (aggregated, etag) {
                        (true, Some(etag)) => Some((etag, body.clone())),
                        _ => None,
                    };
                    (aggregated, body)
                }
                Err(e) if e.code() == Some(304) && state.etags[slot].is_some() => {
                    let body = state.etags[slot]
                        .as_ref()
                        .map(|(_, b)| b.clone())
                        .unwrap_or_default();
                    (true, body)
                }
                Err(e) => return Err(e),
            };
            let request = format!("GET {path}");
            if aggregated {
                let list: GroupDiscoveryList =
                    decode_json(&request, &body, "APIGroupDiscoveryList")?;
                if let Err(why) = list.merge_into(&mut data) {
                    state.etags[slot] = None;
                    return Err(legacy::malformed(&request, path, &why));
                }
            } else if slot == 0 {
                legacy::core_group(&self.client, &body, &mut data)?;
            } else {
                legacy::groups(&self.client, &body, &mut data)?;
            }
        }
        if let Some(disk) = &self.disk {
            disk.store(&data);
        }
        let data = Arc::new(data);
        state.data = Some(data.clone());
        state.taken = Some(Instant::now());
        state.from_server = true;
        Ok(data)
    }
}
