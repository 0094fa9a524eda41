"""leaf_live.agents"""
