// Pooled CUDA events: how the threaded engine knows that a GPU operation's work is done
// without waiting for it on the host (docs/design/engine.md, "GPU completion").
//
// An Event is a cudaEvent_t recorded on one stream, shared by reference count between the
// variables an operation touched; the last Release returns it to its device's pool, so no
// event is created or destroyed per operation. Everything here exists only in builds with
// WEFT_USE_CUDA; the declarations need no CUDA header so that engine code can name them.
#pragma once

#include <cstddef>
#include <vector>

namespace weft {
namespace gpu {

struct Event;

// Takes an event from device `dev`'s pool and records it on `stream` (a stream of that
// device); the caller owns one reference. Throws weft::Error when CUDA fails.
Event* Record(int dev, void* stream);
void Retain(Event* ev);
// Drops a reference; the last one returns the event to its pool. Null is ignored.
void Release(Event* ev);
// The stream the event was recorded on: work later on that same stream is ordered after
// it already and needs no wait.
void* StreamOf(const Event* ev);
// Makes `stream` wait for the event without blocking the host.
void StreamWait(void* stream, Event* ev);
// Blocks the host until the event's work is done; throws the CUDA error it ended with.
void HostWait(Event* ev);
// True once the event's work is done (or failed: the failure surfaces at the next wait).
bool Done(Event* ev);

// The events an engine operation that frees device memory (a variable's deletion) must
// see completed before the memory may go to another user: set by the engine around the
// deletion, read by Storage::Free (core/storage/storage.cc), which parks the block until
// they are done instead of handing it out at once.
class FreeFenceScope {
 public:
  explicit FreeFenceScope(const std::vector<Event*>* events);
  ~FreeFenceScope();
  FreeFenceScope(const FreeFenceScope&) = delete;
  FreeFenceScope& operator=(const FreeFenceScope&) = delete;

 private:
  const std::vector<Event*>* prev_;
};
// The fence of the deletion running on this thread, or null.
const std::vector<Event*>* CurrentFreeFence();

}  // namespace gpu
}  // namespace weft
