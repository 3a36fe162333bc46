// Runs `start` with a Reply (server/waiting/reply.h) and blocks until that
// reply was called; for tests that drive the coordinator's asynchronous calls.
#ifndef TESTS_SUPPORT_AWAIT_REPLY_H_
#define TESTS_SUPPORT_AWAIT_REPLY_H_

#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "server/waiting/reply.h"

namespace shard::testing {

template <typename T, typename Start>
absl::StatusOr<T> AwaitReply(Start start) {
  absl::Notification answered;
  absl::StatusOr<T> result;
  start([&](absl::StatusOr<T> answer) {
    result = std::move(answer);
    answered.Notify();
  });
  answered.WaitForNotification();
  return result;
}

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_AWAIT_REPLY_H_
