"""Publishing a trained model: ``export.py`` writes the Hub-ready folder (``portable.py`` says which code travels,
``model_folder.py`` loads a saved model), ``descriptions.py`` says what a model is in words and ``cards.py`` renders
its model card from ``model_card_templates/`` (a link to the repository's ``model_cards/``)."""
