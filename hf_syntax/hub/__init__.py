"""Publishing a trained model: ``export.py`` writes the Hub-ready folder, ``cards.py`` renders its model card from
``model_card_templates/`` (a link to the repository's ``model_cards/``)."""
