"""Journey planning: binding requirements to what live discovery observed of an application."""
