// The two inboxes (inbox.h): delivery on the I/O thread, taking and waiting on the consumers' threads.
#include "transport/zmq/inbox.h"

#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iterator>
#include <utility>

#include "engine/frame.h"

namespace gossip::peer::detail {

namespace {
// A model frame's payload in libzmq's own messages, which free their memory when the engine drops its last
// reference (on whichever thread: a zmq_msg_t is not tied to a socket).
struct ReceivedParts final : engine::PayloadParts {
  ReceivedParts(std::vector<zmq::message_t> m, std::size_t total) : messages(std::move(m)) {
    bytes = total;
    parts.reserve(messages.size());
    for (const auto& msg : messages) parts.emplace_back(msg.data<std::byte>(), msg.size());
  }
  std::vector<zmq::message_t> messages;
};

// The `count` parts' n bytes in one buffer of their own.
engine::SharedBytes copyParts(const zmq::message_t* parts, std::size_t count, std::size_t n) {
  auto b = std::make_shared<Bytes>(n);
  std::size_t off = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (parts[k].size() != 0) std::memcpy(b->data() + off, parts[k].data(), parts[k].size());
    off += parts[k].size();
  }
  return b;
}
}  // namespace

void Inboxes::deliver(std::vector<zmq::message_t>& part) {
  const auto kind = engine::peekKindByte({part[1].data<std::byte>(), part[1].size()});
  if (kind == static_cast<std::uint8_t>(engine::FrameKind::Membership)) return toMembership(part);
  {
    // Control frames (acks, edge agreement) have room beyond the limit, so a flood of model frames
    // cannot starve them.
    std::lock_guard lock(framesMutex_);
    const bool control = kind && *kind != static_cast<std::uint8_t>(engine::FrameKind::Model);
    if (control ? frames_.size() >= 2 * opt_.inbox_max_frames : full()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  std::size_t size = 0;
  for (std::size_t k = 2; k < part.size(); ++k) size += part[k].size();
  const auto* h = part[1].data<std::byte>();
  Incoming in;
  in.frame.header = Bytes(h, h + part[1].size());
  in.bytes = size;
  in.model = kind == static_cast<std::uint8_t>(engine::FrameKind::Model);
  if (size >= kLargePayloadBytes)
    std::move(part.begin() + 2, part.end(), std::back_inserter(in.parts));
  else
    in.frame.payload = copyParts(part.data() + 2, part.size() - 2, size);
  framesReceived_.fetch_add(1, std::memory_order_relaxed);
  bytesReceived_.fetch_add(part[1].size() + size, std::memory_order_relaxed);
  {
    std::lock_guard lock(framesMutex_);
    frameBytes_ += size;
    frames_.push_back(std::move(in));
  }
  framesCv_.notify_all();
}

// A membership frame: small, copied without the pool (whose buffers are for model-sized payloads).
void Inboxes::toMembership(const std::vector<zmq::message_t>& part) {
  std::unique_lock lock(memberMutex_);
  if (member_.size() >= opt_.membership_inbox_max_frames) {
    membershipDropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  lock.unlock();  // the copy runs unlocked: only this thread appends
  const auto* h = part[1].data<std::byte>();
  auto payload = std::make_shared<Bytes>();
  for (std::size_t k = 2; k < part.size(); ++k) {
    const auto* b = part[k].data<std::byte>();
    payload->insert(payload->end(), b, b + part[k].size());
  }
  const std::size_t bytes = part[1].size() + payload->size();
  engine::RawFrame f{.header = Bytes(h, h + part[1].size()), .payload = std::move(payload), .parts = {}};
  framesReceived_.fetch_add(1, std::memory_order_relaxed);
  bytesReceived_.fetch_add(bytes, std::memory_order_relaxed);
  lock.lock();
  member_.push_back(std::move(f));
  lock.unlock();
  memberCv_.notify_all();
}

bool Inboxes::pop(engine::RawFrame& out) {
  Incoming in;
  {
    std::lock_guard lock(framesMutex_);
    if (frames_.empty()) return false;
    in = std::move(frames_.front());
    frames_.pop_front();
    frameBytes_ -= in.bytes;
  }
  // Unlocked: the I/O thread goes on filling the inbox meanwhile.
  if (!in.parts.empty()) {
    if (in.model) {
      in.frame.parts = std::make_shared<const ReceivedParts>(std::move(in.parts), in.bytes);
    } else {
      in.frame.payload = copyParts(in.parts.data(), in.parts.size(), in.bytes);
      in.parts.clear();
      if (in.bytes >= kTrimAfterBytes) releaseFreedMemory();
    }
  }
  out = std::move(in.frame);
  return true;
}

// libzmq allocated a large frame's 1 MiB parts with malloc on its I/O thread, and glibc keeps the freed
// parts in that thread's arena for reuse instead of returning them: after one edge set-up frame of a
// 100M-parameter CHOCO model (a 400 MB EdgeOpen, once per edge life), the daemon held 400 MB more for the
// rest of its run, 4 bytes per parameter (22.1 instead of 18.7; docs/results.md §21). Model frames are not
// trimmed after: their parts are reused round after round. malloc_trim releases the free pages of every
// arena, once per such frame (its time was not measured apart; the rounds' times did not show it).
void Inboxes::releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

bool Inboxes::waitFrames(std::chrono::milliseconds timeout, const std::atomic<bool>& failed) {
  std::unique_lock lock(framesMutex_);
  framesCv_.wait_for(lock, timeout, [&] { return !frames_.empty() || failed.load(); });
  return !frames_.empty();
}

bool Inboxes::popMembership(engine::RawFrame& out) {
  std::lock_guard lock(memberMutex_);
  if (member_.empty()) return false;
  out = std::move(member_.front());
  member_.pop_front();
  return true;
}

bool Inboxes::waitMembership(std::chrono::milliseconds timeout, const std::atomic<bool>& failed) {
  std::unique_lock lock(memberMutex_);
  return memberCv_.wait_for(lock, timeout, [&] { return !member_.empty() || failed.load(); }) && !member_.empty();
}

void Inboxes::wakeAll() {
  framesCv_.notify_all();
  memberCv_.notify_all();
}

}  // namespace gossip::peer::detail
