"""Generated gRPC stubs of the wire API shard.v1 (shard_pb2, shard_pb2_grpc),
produced at build time from proto/shard/v1/shard.proto."""
