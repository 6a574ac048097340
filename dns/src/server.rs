//! The DNS wire: UDP and TCP listeners on one loopback address, a message in, a message out.
//!
//! Kubernetes counterpart: CoreDNS's `dns` server (`coredns/coredns:core/dnsserver/server.go`),
//! which serves the same zone on UDP and TCP. A UDP answer larger than 512 bytes (or the
//! client's EDNS size) is sent truncated with TC set, so the resolver retries over TCP
//! (RFC 1035 §4.2.1, RFC 6891); TCP messages carry a two-byte length (RFC 1035 §4.2.2).
//!
//! minik simplifies: one task per TCP connection, no idle timeout beyond the shutdown token.

use std::net::SocketAddr;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{DNSClass, Name};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::records::{self, Cluster};

/// What a query is answered from.
#[derive(Clone)]
pub struct Zone {
    pub domain: Name,
    pub services: Store<Service>,
    pub slices: Store<EndpointSlice>,
}

impl Zone {
    /// The response to one request's bytes (None: not even a header to answer to).
    pub fn respond(&self, request: &[u8]) -> Option<Message> {
        let request = match Message::from_vec(request) {
            Ok(request) => request,
            Err(error) => {
                debug!(%error, "undecodable request");
                let id = u16::from_be_bytes([*request.first()?, *request.get(1)?]);
                return Some(Message::error_msg(id, OpCode::Query, ResponseCode::FormErr));
            }
        };
        let mut response =
            Message::error_msg(request.id(), request.op_code(), ResponseCode::NoError);
        response
            .set_message_type(MessageType::Response)
            .set_recursion_desired(request.recursion_desired())
            .set_recursion_available(false);
        let query = match (request.op_code(), request.queries()) {
            (OpCode::Query, [query]) if query.query_class() == DNSClass::IN => query.clone(),
            (OpCode::Query, _) => {
                response.set_response_code(ResponseCode::FormErr);
                return Some(response);
            }
            _ => {
                response.set_response_code(ResponseCode::NotImp);
                return Some(response);
            }
        };
        let (services, slices) = (self.services.state(), self.slices.state());
        let cluster = Cluster {
            services: &services,
            slices: &slices,
        };
        let answer = records::answer(&self.domain, query.name(), query.query_type(), &cluster);
        debug!(name = %query.name(), kind = %query.query_type(), code = %answer.code, answers = answer.answers.len(), "answered");
        response
            .add_query(query)
            .set_response_code(answer.code)
            .set_authoritative(answer.code != ResponseCode::Refused)
            .add_answers(answer.answers)
            .add_additionals(answer.additionals);
        if let Some(soa) = answer.soa {
            response.add_name_server(soa);
        }
        Some(response)
    }
}

/// Serves UDP until `shutdown`.
pub async fn serve_udp(socket: UdpSocket, zone: Zone, shutdown: CancellationToken) {
    let mut buffer = vec![0u8; 4096];
    loop {
        let (len, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            received = socket.recv_from(&mut buffer) => match received {
                Ok(received) => received,
                Err(error) => { warn!(%error, "udp receive failed"); continue; }
            },
        };
        let Some(response) = zone.respond(&buffer[..len]) else {
            continue;
        };
        let limit = Message::from_vec(&buffer[..len])
            .ok()
            .and_then(|r| r.extensions().as_ref().map(|e| e.max_payload()))
            .unwrap_or(512)
            .max(512) as usize;
        if let Some(bytes) = udp_bytes(&response, limit) {
            if let Err(error) = socket.send_to(&bytes, peer).await {
                debug!(%error, %peer, "udp send failed");
            }
        }
    }
}

/// The response's bytes, or its truncated form (TC set, no records) when over `limit`.
fn udp_bytes(response: &Message, limit: usize) -> Option<Vec<u8>> {
    let bytes = response.to_vec().ok()?;
    if bytes.len() <= limit {
        return Some(bytes);
    }
    let mut truncated = response.truncate();
    truncated.set_truncated(true);
    truncated.to_vec().ok()
}

/// Serves TCP until `shutdown`, one task per connection.
pub async fn serve_tcp(
    listener: TcpListener,
    zone: Zone,
    tasks: TaskTracker,
    shutdown: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => { warn!(%error, "tcp accept failed"); continue; }
            },
        };
        let (zone, stop) = (zone.clone(), shutdown.child_token());
        tasks.spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                result = connection(stream, &zone) => if let Err(error) = result {
                    debug!(%error, %peer, "tcp connection ended");
                },
            }
        });
    }
}

/// Length-prefixed messages until the client closes.
async fn connection(mut stream: TcpStream, zone: &Zone) -> std::io::Result<()> {
    loop {
        let mut len = [0u8; 2];
        if stream.read_exact(&mut len).await.is_err() {
            return Ok(()); // closed between messages
        }
        let mut request = vec![0u8; u16::from_be_bytes(len) as usize];
        stream.read_exact(&mut request).await?;
        let Some(bytes) = zone.respond(&request).and_then(|r| r.to_vec().ok()) else {
            return Ok(());
        };
        stream
            .write_all(&(bytes.len() as u16).to_be_bytes())
            .await?;
        stream.write_all(&bytes).await?;
    }
}

/// Binds UDP and TCP on `listen` (port 0: the same free port for both).
pub async fn bind(listen: SocketAddr) -> std::io::Result<(UdpSocket, TcpListener)> {
    let tcp = TcpListener::bind(listen).await?;
    let udp = UdpSocket::bind(tcp.local_addr()?).await?;
    Ok((udp, tcp))
}
