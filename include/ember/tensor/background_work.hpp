// BackgroundWork: how threads that queue device work in the background keep it out of a
// DeviceGraph capture on another thread (device_graph.hpp). Light: the DataLoader includes it.
#pragma once

namespace ember {

/// Held by a thread that queues device work in the background (DataLoader workers reading and
/// collating a batch onto the device): a capture waits for such scopes to end and holds new ones
/// off until it ends, so their work never lands in the graph. Opening one inside a capture on the
/// same thread, or capturing inside one, is an error; a capture must not wait for a thread that
/// opens one (the DataLoader refuses to hand out a batch inside a capture).
class BackgroundWork {
 public:
  BackgroundWork();
  ~BackgroundWork();
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;
};

/// Whether the calling thread is inside DeviceGraph::capture.
bool capture_on_this_thread();

}  // namespace ember
