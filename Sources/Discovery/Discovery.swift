public enum DiscoveryModule {}
