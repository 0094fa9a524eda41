"""leaf_live.scoring"""
