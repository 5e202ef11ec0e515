"""Human review: people label drafts (and answers), and qagen measures how far its critics and
judges agree with them (`labels`, `sample`, `agreement`)."""
