class KnowledgeInputError(ValueError):
    """Bad input for the knowledge base; the message is shown to the user as is."""
