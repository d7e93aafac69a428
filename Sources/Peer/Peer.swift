public enum PeerModule {}
