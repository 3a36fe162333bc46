// How the coordinator answers a call later: a Reply is called exactly once
// with the call's result, never under a lock of the service. A mutation's
// answer goes out through ReplyWhenDurable (write_path.h), so a client
// never hears OK for a change a crash could still lose.
//
// A Reply may carry its call's Cancellation: what the transport (the gRPC
// glue) signals when the client goes away. Whoever parks the call until a
// condition holds registers on it, so a cancelled call ends at once; the
// transport knows nothing else of how calls wait.
#ifndef SERVER_WAITING_REPLY_H_
#define SERVER_WAITING_REPLY_H_

#include <memory>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace shard::server {

// The client of one call went away. Thread-safe.
class Cancellation {
 public:
  // Runs `on_cancel` (once, without locks held) when Cancel() is called,
  // replacing an earlier registration. False, dropping `on_cancel`, if the
  // call was cancelled already: the caller ends the call itself.
  bool OnCancel(absl::AnyInvocable<void() &&> on_cancel)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The client went away: runs the registration, if any.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::AnyInvocable<void() &&> on_cancel_ ABSL_GUARDED_BY(mu_);
};

template <typename Response>
class Reply {
 public:
  using Answer = absl::AnyInvocable<void(absl::StatusOr<Response>) &&>;

  Reply() = default;
  // A reply whose call cannot be cancelled (in-process callers, tests).
  template <typename F, typename = std::enable_if_t<
                            !std::is_same_v<std::decay_t<F>, Reply>>>
  Reply(F&& answer)  // NOLINT: implicit, as a callable stands for a Reply.
      : answer_(std::forward<F>(answer)) {}
  Reply(Answer answer, std::shared_ptr<Cancellation> cancellation)
      : answer_(std::move(answer)), cancellation_(std::move(cancellation)) {}

  // Answers the call; once.
  void operator()(absl::StatusOr<Response> result) && {
    std::move(answer_)(std::move(result));
  }
  // The call's cancellation; null when it cannot be cancelled.
  const std::shared_ptr<Cancellation>& cancellation() const {
    return cancellation_;
  }

 private:
  Answer answer_;
  std::shared_ptr<Cancellation> cancellation_;
};

}  // namespace shard::server

#endif  // SERVER_WAITING_REPLY_H_
