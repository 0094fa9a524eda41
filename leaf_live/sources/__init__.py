"""leaf_live.sources"""
