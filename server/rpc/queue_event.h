// What a completion queue's thread of WaitingCallQueues is handed back:
// the tag of every operation started on those queues.
#ifndef SERVER_RPC_QUEUE_EVENT_H_
#define SERVER_RPC_QUEUE_EVENT_H_

namespace shard::server {

class QueueEvent {
 public:
  // Runs on the queue's thread; `ok` is the queue's verdict on the
  // operation (false: it failed or was cancelled).
  virtual void Happened(bool ok) = 0;

 protected:
  ~QueueEvent() = default;
};

}  // namespace shard::server

#endif  // SERVER_RPC_QUEUE_EVENT_H_
