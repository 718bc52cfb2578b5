// Edge set-up in chunks (linked mode, replica methods). When an edge is agreed to start at round s, each end
// needs the other's public state as of the start of round s: a model's worth (CHOCO's x_hat, LEAD's h),
// 400 MB for a 100M-parameter model. Until frame version 4 each end pushed it as one EdgeOpen frame, kept
// whole until acknowledged: a lost or cut-off frame was sent again whole after minutes, and the receiver
// gathered the transport's parts of it into a second buffer of the model's size. Now the receiving end
// pulls it with the state transfer's schedule (engine/state_fetch.h) from its one source, the peer:
//
//   EdgeAsk   (control channel, round s)  u64 edge life | u64 first value index | u64 value count | u64 values per chunk
//   EdgePart  (data channel, round s)     u64 edge life | u64 dimension | u64 first value index | array<Real> values
//
// The receiver asks as soon as the start is agreed; the sender keeps an ask that comes before it has begun
// round s and answers it then (its public state is captured when it begins round s, beforeLocalWork). What
// arrived is kept, a chunk that does not come is asked again after the fetch's silence, every chunk carries
// its frame's checksum, and the sender serves the state until the peer acknowledges round s (by then the
// peer has opened the edge). A part asked again while the transport still holds the copy sent before is
// not sent again (serveEdgeAsk): on a capped link the silences fire while parts wait in the queue. The
// asks name the edge life (proposal id), so a part of an earlier life of the same pair is refused.
//
// Not thread-safe: the engine's thread, as the rest of LinkedEngine.
#include "core/serial.h"
#include "engine/linked_engine.h"

namespace gossip::engine {
namespace {
// Asks kept per edge until the start round begins (a fetch has window_chunks / request_chunks = 4 in
// flight, asked again after each silence).
constexpr std::size_t kMaxAsksWaiting = 16;
// A part held by the transport this long is sent again all the same: libzmq frees the messages of a broken
// connection's pipe only when the socket is next used, so "held" could otherwise mean "stuck" for as long
// as nothing else goes to that peer. A part takes seconds on a capped, queued link (2-7 s at 100 Mbit/s).
constexpr std::uint64_t kMaxHoldMs = 30000;
// Parts remembered per edge: a model's chunks (7,630 of 512 KiB for 1B parameters) with room to spare. A
// peer that asks off the chunk grid makes entries of its own; past this the finished ones are purged, and
// if that is not enough a part goes unremembered (it may then be sent twice, which is harmless).
constexpr std::size_t kMaxPartsRemembered = 16384;
}  // namespace

void LinkedEngine::startEdgeFetch(PeerId j, Link& l) {
  const auto dim = static_cast<std::size_t>(node_->algorithm().x().size());
  l.edgeFetch.emplace(dim, linkOpts_.edge_fetch, nowMs_);
  const PeerId from[] = {j};
  l.edgeFetch->addSources(from, nowMs_);
  pumpEdgeFetch(j, l);
}

void LinkedEngine::pumpEdgeFetch(PeerId j, Link& l) {
  std::vector<StateAsk> asks;
  l.edgeFetch->due(nowMs_, asks);
  for (const StateAsk& a : asks) {
    Bytes b;
    ByteWriter w(b);
    w.put(l.life);
    putAsk(w, a);
    sendControl(j, FrameKind::EdgeAsk, l.start, std::move(b));
    ++stats_.edge_asks_sent;
  }
}

void LinkedEngine::receiveEdgeAsk(const FrameHeader& h, const Bytes& payload, Link* l) {
  ByteReader r(payload, "edge ask");
  const auto life = r.get<std::uint64_t>();
  const StateAsk a = getAsk(r, h.sender);
  r.expectEnd();
  if (!askInBounds(a, static_cast<std::uint64_t>(node_->algorithm().x().size()))) return reject("bad_edge_ask");
  if (!l || !l->scheduled || life != l->life || h.round != l->start) {
    // The edge may have closed at our end after its rounds were mixed here, and not yet at the peer's.
    const auto c = closed_.find(h.sender);
    if (c != closed_.end() && c->second.incarnation == h.incarnation && c->second.life == life &&
        c->second.start == h.round && c->second.myPublic)
      return serveEdgeAsk(h.sender, life, h.round, *c->second.myPublic, c->second.partsQueued, a);
    return reject("unwanted_edge");
  }
  if (l->myPublic) return serveEdgeAsk(h.sender, l->life, l->start, *l->myPublic, l->partsQueued, a);
  // Round s began and the state was let go: the peer acknowledged round s, so this ask is a late copy.
  if (begun_ && *begun_ >= l->start) return ++stats_.duplicates, void();
  const bool again = std::any_of(l->asksWaiting.begin(), l->asksWaiting.end(), [&](const StateAsk& w) {
    return w.at == a.at && w.count == a.count && w.chunk == a.chunk;
  });
  if (again) return;
  if (l->asksWaiting.size() >= kMaxAsksWaiting) return reject("edge_asks_flood");
  l->asksWaiting.push_back(a);
}

void LinkedEngine::serveEdgeAsk(PeerId j, std::uint64_t life, Round start, const std::vector<Real>& pub,
                                PartsQueued& queued, const StateAsk& a) {
  if (!askInBounds(a, pub.size())) return reject("bad_edge_ask");  // the parts are cut from `pub` itself
  // An ask for nothing (a model of dimension 0: one empty chunk) still gets its one empty part.
  const std::uint64_t end = a.at + a.count;
  for (std::uint64_t at = a.at; at < end || (at == a.at && a.count == 0); at += a.chunk) {
    // Asked again while the transport still holds the part: it is queued, not lost. Serving it again
    // would queue a second copy behind the first, and on a capped link the receiver's silences then
    // re-asked faster than the queue drained (docs/results.md §27).
    if (const auto q = queued.find(at);
        q != queued.end() && !q->second.payload.expired() && nowMs_ < q->second.sentMs + kMaxHoldMs) {
      ++stats_.edge_parts_still_queued;
      if (a.count == 0) break;
      continue;
    }
    Bytes b;
    ByteWriter w(b);
    w.put(life);
    putChunk(w, pub, at, static_cast<std::size_t>(std::min(a.chunk, end - at)));
    SharedBytes sent = sendControl(j, FrameKind::EdgePart, start, std::move(b));
    if (queued.size() >= kMaxPartsRemembered)
      std::erase_if(queued, [](const auto& kv) { return kv.second.payload.expired(); });
    if (queued.size() < kMaxPartsRemembered || queued.count(at)) queued[at] = {sent, nowMs_};
    if (a.count == 0) break;
  }
}

void LinkedEngine::receiveEdgePart(const FrameHeader& h, const Bytes& payload, Link* l) {
  ByteReader r(payload, "edge part");
  const auto life = r.get<std::uint64_t>();
  const Chunk c = getChunk(r);
  r.expectEnd();
  if (!l || !l->scheduled || life != l->life || h.round != l->start) return reject("unwanted_edge");
  if (!l->edgeFetch) {  // the edge is open: a chunk asked twice
    ++stats_.edge_parts_twice;
    return ++stats_.duplicates, void();
  }
  if (c.dim != l->edgeFetch->dim()) return reject("wrong_dimension");
  const std::size_t had = l->edgeFetch->valuesHave();
  if (auto why = l->edgeFetch->place(h.sender, h.round, c.at, c.values, nowMs_)) return reject(*why);
  if (l->edgeFetch->valuesHave() > had)
    ++stats_.edge_parts_taken;
  else
    ++stats_.edge_parts_twice;
  if (!l->edgeFetch->complete()) pumpEdgeFetch(h.sender, *l);  // the window has room again
}

}  // namespace gossip::engine
