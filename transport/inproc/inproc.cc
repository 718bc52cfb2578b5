#include "transport/inproc/inproc.h"

#include "engine/frame.h"

namespace gossip::engine {

void InprocNetwork::attach(PeerId id) { boxes_[id] = std::make_unique<Mailbox>(); }

void InprocNetwork::detach(PeerId id) { boxes_.erase(id); }

void InprocNetwork::deliver(PeerId from, PeerId to, Bytes header, SharedBytes payload, bool droppable) {
  auto it = boxes_.find(to);
  if (it == boxes_.end()) return;  // sent to a dead node: lost, as on a real network
  if (droppable && drop_ && drop_(from, to)) {
    std::lock_guard lock(statsMutex_);
    ++dropped_;
    return;
  }
  Mailbox& box = *it->second;
  std::lock_guard lock(box.mutex);
  box.frames.push_back({.header = std::move(header), .payload = std::move(payload), .parts = {}});
}

bool InprocNetwork::take(PeerId id, RawFrame& out) {
  auto it = boxes_.find(id);
  if (it == boxes_.end()) return false;
  Mailbox& box = *it->second;
  std::lock_guard lock(box.mutex);
  if (box.head == box.frames.size()) {
    box.frames.clear();
    box.head = 0;
    return false;
  }
  out = std::move(box.frames[box.head++]);
  return true;
}

std::size_t InprocNetwork::inFlight() const {
  std::size_t n = 0;
  for (const auto& [id, box] : boxes_) {
    std::lock_guard lock(box->mutex);
    n += box->frames.size() - box->head;
  }
  return n;
}

void InprocTransport::send(PeerId to, Bytes header, SharedBytes payload) {
  // The frame kind is the header's byte 5. The drop rule applies to the frames the linked mode recovers when
  // lost: model frames (resent until acknowledged) and an edge set-up's asks and parts (asked again).
  const bool droppable = peekIsKind(header, FrameKind::Model) || peekIsKind(header, FrameKind::EdgeAsk) ||
                         peekIsKind(header, FrameKind::EdgePart);
  net_.deliver(self_, to, std::move(header), std::move(payload), droppable);
}

}  // namespace gossip::engine
