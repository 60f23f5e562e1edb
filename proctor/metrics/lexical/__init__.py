"""Word-level helpers of the NLP metrics: NLTK's Porter stemmer and an offline WordNet."""
