// The wire's leader hint: a coordinator replica that is not the leader
// answers UNAVAILABLE and names the leader's HOST:PORT in this trailing
// metadata (also in the message), so that clients move to it. See
// proto/shard/v1/shard.proto.
#ifndef COMMON_LEADER_HINT_H_
#define COMMON_LEADER_HINT_H_

namespace shard {

inline constexpr char kLeaderMetadataKey[] = "shard-leader";

}  // namespace shard

#endif  // COMMON_LEADER_HINT_H_
