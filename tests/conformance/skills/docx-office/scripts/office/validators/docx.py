"""DOCX-specific checks."""
from .base import BaseValidator


class DocxValidator(BaseValidator):
    def validate(self):
        return super().validate() and not self.path.endswith(".doc")


if __name__ == "__main__":
    print(DocxValidator("x.docx").validate())
