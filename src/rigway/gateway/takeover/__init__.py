"""Human takeover: a person drives a live session from a page, then hands control back."""
