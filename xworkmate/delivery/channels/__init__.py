"""Delivery channels: small modules behind one interface (channels.base.Channel)."""
