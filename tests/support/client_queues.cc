#include "tests/support/client_queues.h"

namespace shard::testing {

ClientQueues::ClientQueues(int queues) {
  for (int i = 0; i < queues; ++i) {
    queues_.push_back(std::make_unique<grpc::CompletionQueue>());
    threads_.emplace_back([queue = queues_.back().get()] {
      void* tag = nullptr;
      bool ok = false;
      while (queue->Next(&tag, &ok)) {
        static_cast<ClientQueueEvent*>(tag)->Happened(ok);
      }
    });
  }
}

ClientQueues::~ClientQueues() {
  for (const auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
}

grpc::CompletionQueue* ClientQueues::Next() {
  return queues_[next_.fetch_add(1) % queues_.size()].get();
}

}  // namespace shard::testing
