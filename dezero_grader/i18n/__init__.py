"""The learner-facing texts in the learner's language: gettext catalogues under locale/."""
