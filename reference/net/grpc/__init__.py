"""The RocketMQ 5 gRPC front: ``apache.rocketmq.v2.MessagingService`` over the reference core."""
