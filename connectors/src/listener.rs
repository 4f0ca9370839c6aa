//! A source's TCP listener: accepts connections up to a limit (one past it is closed at once
//! and counted), serves each on its own task, and on stop accepts no more and gives the
//! connections 10 s to finish what they are doing.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::sink::{stopped, Sink};

/// Accepts connections on `listener` until `stop` turns true, at most `limit` open at once,
/// each served by `serve(connection, peer, stop)`.
pub async fn serve_connections<F, Fut>(
    listener: TcpListener,
    sink: Arc<Sink>,
    limit: usize,
    mut stop: watch::Receiver<bool>,
    serve: F,
) -> std::io::Result<()>
where
    F: Fn(TcpStream, SocketAddr, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limit));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            sink.metrics.reject("connections");
            tracing::warn!(%peer, limit, "too many connections; closed one");
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let served = serve(tcp, peer, stop.clone());
        let sink = sink.clone();
        tasks.spawn(async move {
            sink.metrics.connections.fetch_add(1, Relaxed);
            served.await;
            sink.metrics.connections.fetch_sub(1, Relaxed);
            drop(slot);
        });
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    Ok(())
}
