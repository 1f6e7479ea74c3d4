// BackgroundWork: how threads that queue device work in the background keep it out of a
// DeviceGraph capture on another thread (device_graph.hpp). Light: the DataLoader includes it.
#pragma once

namespace ember {

/// Held by a thread that queues device work in the background (DataLoader workers collating a
/// batch onto the device): a capture that records work waits for such scopes to end and holds
/// new ones off until it ends, so their uploads never land in the graph. Do not open one inside
/// a capture, nor wait inside a capture for a thread that opens one (it would wait forever).
class BackgroundWork {
 public:
  BackgroundWork();
  ~BackgroundWork();
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;
};

}  // namespace ember
