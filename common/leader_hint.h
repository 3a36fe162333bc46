// The wire's leader hint: a coordinator replica that is not the leader
// answers UNAVAILABLE and names the leader's HOST:PORT in this trailing
// metadata (also in the message), so that clients move to it. See
// proto/shard/v1/shard.proto. Every such refusal (leader named or not yet
// known) also carries kStandbyMetadataKey ("1"): the replica is up and a
// leader is being elected or named, so clients retry at a short fixed pace
// instead of backing off as from a replica that does not answer.
//
// Every answer of a replicated coordinator (leader or standby) carries its
// leader lease (shardd --leader-lease) in milliseconds as the initial
// metadata kLeaderLeaseMetadataKey, so that clients size the keepalive of
// their open calls to it: a frozen leader is noticed about as soon as a
// standby may take over from it (client/coordinator_channel.h).
#ifndef COMMON_LEADER_HINT_H_
#define COMMON_LEADER_HINT_H_

namespace shard {

inline constexpr char kLeaderMetadataKey[] = "shard-leader";
inline constexpr char kStandbyMetadataKey[] = "shard-standby";
inline constexpr char kLeaderLeaseMetadataKey[] = "shard-leader-lease-ms";

}  // namespace shard

#endif  // COMMON_LEADER_HINT_H_
