// Hands events from any thread to one completion queue's thread, many to
// one queue event: the first event handed over while none waits sets an
// alarm on the queue, due in the past (queued at once); when the queue's
// thread takes the alarm it runs every event handed over until then, in
// order, with ok = true.
//
// Why: a key set wakes every rendezvous waiter on the setter's thread, and
// each answer must be sent from its call's queue thread. An alarm each
// costs a queue operation, a wake-up of the queue's thread and, with
// gRPC's debug checks compiled in (waiting_call_queues.h), a search of the
// queue's list of operations; 99,999 answers then cost 99,999 of them.
// Batched, they cost one per queue per batch.
//
// Thread-safety: Send from any thread. The queue must outlive the handover
// and must not be shut down while an event sent is not yet run (its owner
// waits for every call to end first, and a call ends only after its
// answer ran).
#ifndef SERVER_RPC_QUEUE_HANDOVER_H_
#define SERVER_RPC_QUEUE_HANDOVER_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/queue_event.h"

namespace shard::server {

class QueueHandover final : public QueueEvent {
 public:
  // `queue` is not owned.
  explicit QueueHandover(grpc::ServerCompletionQueue* queue) : queue_(queue) {}
  QueueHandover(const QueueHandover&) = delete;
  QueueHandover& operator=(const QueueHandover&) = delete;

  grpc::ServerCompletionQueue* queue() const { return queue_; }

  // Any thread: `event` (not owned; it must live until it ran) runs on
  // the queue's thread.
  void Send(QueueEvent* event) ABSL_LOCKS_EXCLUDED(mu_);

  // The queue's thread, for the alarm: runs the events sent so far.
  void Happened(bool ok) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  grpc::ServerCompletionQueue* const queue_;
  absl::Mutex mu_;
  // Sent, not yet run. The alarm is set exactly while this is not empty:
  // the Send that fills it sets it, the Happened that empties it took it.
  std::vector<QueueEvent*> sent_ ABSL_GUARDED_BY(mu_);
  grpc::Alarm alarm_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_QUEUE_HANDOVER_H_
