"""Every view the explorer app draws, as Plotly figures (placeholder, filled below)."""
