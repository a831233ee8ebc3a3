from .base import BaseValidator
from .docx import DocxValidator

__all__ = ["BaseValidator", "DocxValidator"]
